"""posttrain: post-train language models with SFT, DPO and GRPO on verifiable tasks."""

__version__ = "0.1.0"
