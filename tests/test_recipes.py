"""Every shipped recipe passes the config checker and names only registered domains."""

from __future__ import annotations

from pathlib import Path

import pytest

from posttrain.config import load_config
from posttrain.train.mixture import mixture_weights
from posttrain.train.recipe_inputs import resolve_domains

RECIPES = sorted((Path(__file__).parent.parent / "recipes").glob("*.yaml"))


def test_the_recipes_are_there() -> None:
    assert {p.name for p in RECIPES} >= {"smollm2-arith.yaml", "gpu-qwen-7b.yaml"}


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.name)
def test_a_recipe_validates_and_resolves_its_domains_and_mixture(recipe: Path) -> None:
    config = load_config(recipe)
    domains = resolve_domains(config)
    assert [d.id for d in domains] == config.domains
    assert len(mixture_weights(domains, config.mixture)) == len(domains)
