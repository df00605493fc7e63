"""Every shipped recipe passes the config checker and names only registered domains."""

from __future__ import annotations

import sys
import types
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


def test_a_recipe_resolves_a_domain_from_an_installed_plugin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importlib.metadata import EntryPoint

    from posttrain.domains import registry
    from posttrain.domains.arithmetic import AdditionDomain

    class PluginDomain(AdditionDomain):
        id = "plugin/addition-v1"

    module = types.ModuleType("fake_recipe_plugin")
    module.DOMAIN = PluginDomain()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    point = EntryPoint("addition", f"{module.__name__}:DOMAIN", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda group: [point])
    private = registry.DomainRegistry()
    for domain in registry.all_domains():
        private.register(domain)
    monkeypatch.setattr(registry, "_REGISTRY", private)
    config = load_config(RECIPES[0]).model_copy(update={"domains": ["plugin/addition-v1"]})
    assert [d.id for d in resolve_domains(config)] == ["plugin/addition-v1"]
