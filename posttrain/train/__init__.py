"""Trainers: SFT, DPO and GRPO (one loop each), shared loss math, checkpoints, the recipe.

Import the stage you need from its module (`posttrain.train.grpo`, ...); the
recipe that chains them is `posttrain.train.recipe.run_recipe`.
"""

from posttrain.train.checkpoint import load_checkpoint, save_checkpoint
from posttrain.train.dpo import PreferencePair, mine_pairs, train_dpo
from posttrain.train.grpo import train_grpo
from posttrain.train.losses import dpo_loss, grpo_advantages, grpo_loss, sft_loss
from posttrain.train.recipe import run_recipe
from posttrain.train.sft import train_sft

__all__ = [
    "PreferencePair",
    "dpo_loss",
    "grpo_advantages",
    "grpo_loss",
    "load_checkpoint",
    "mine_pairs",
    "run_recipe",
    "save_checkpoint",
    "sft_loss",
    "train_dpo",
    "train_grpo",
    "train_sft",
]
