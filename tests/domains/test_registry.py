"""The domain registry: id checks, look-ups with suggestions, and entry-point loading."""

from __future__ import annotations

import sys
import types
from importlib.metadata import EntryPoint

import pytest

from posttrain.domains import STARTER_DOMAINS, Domain, all_domains, domain_ids, get_domain
from posttrain.domains import registry as registry_module
from posttrain.domains.base import Axes, Session
from posttrain.domains.registry import ENTRY_POINT_GROUP, DomainRegistry
from posttrain.types import Reference, Rollout, Task, Verdict


class FakeDomain:
    """The smallest object that satisfies the Domain protocol."""

    axes = Axes("text", "none", "single", "exact")
    max_turns = 1

    def __init__(self, domain_id: str) -> None:
        self.id = domain_id

    def generate(self, seed: int, difficulty: int) -> Task:
        return Task(f"{self.id}@{seed}", self.id, [], "", difficulty, seed)

    def reference(self, task: Task) -> Reference:
        return Reference.single("")

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        return Verdict(0.0, False, "fake")


def test_register_returns_the_domain() -> None:
    registry = DomainRegistry()
    domain = FakeDomain("fake/one-v1")
    assert registry.register(domain) is domain
    assert registry.get("fake/one-v1") is domain


def test_register_rejects_a_duplicate_id() -> None:
    registry = DomainRegistry()
    registry.register(FakeDomain("fake/one-v1"))
    with pytest.raises(ValueError, match="already registered"):
        registry.register(FakeDomain("fake/one-v1"))


@pytest.mark.parametrize(
    "domain_id",
    ["fake/one", "one-v1", "Fake/one-v1", "fake/one-vx", "fake/one v1", "/one-v1", "a/b/c-v1", ""],
)
def test_register_rejects_an_id_not_shaped_family_name_version(domain_id: str) -> None:
    with pytest.raises(ValueError, match="family/name-vN"):
        DomainRegistry().register(FakeDomain(domain_id))


def test_register_accepts_a_new_version_of_an_id() -> None:
    registry = DomainRegistry()
    registry.register(FakeDomain("fake/one-v1"))
    registry.register(FakeDomain("fake/one-v2"))
    assert registry.ids() == ["fake/one-v1", "fake/one-v2"]


@pytest.mark.parametrize("thing", [object(), FakeDomain, "fake/one-v1"])
def test_register_rejects_what_is_not_a_domain_instance(thing: object) -> None:
    with pytest.raises(TypeError, match="Domain"):
        DomainRegistry().register(thing)  # type: ignore[arg-type]


def test_unknown_id_raises_key_error_naming_it_and_the_closest_ids() -> None:
    registry = DomainRegistry()
    for name in ("fake/addition-v1", "fake/addition-v2", "other/zebra-v1"):
        registry.register(FakeDomain(name))
    with pytest.raises(KeyError) as excinfo:
        registry.get("fake/adition-v1")
    message = str(excinfo.value)
    assert "'fake/adition-v1'" in message
    assert "'fake/addition-v1'" in message
    assert "zebra" not in message


def test_unknown_id_without_close_matches_says_how_to_list_ids() -> None:
    with pytest.raises(KeyError, match="posttrain domains list"):
        DomainRegistry().get("nothing/like-it-v1")


def test_a_family_given_for_a_domain_id_names_one_of_its_domains() -> None:
    registry = DomainRegistry()
    for name in ("fake/addition-v1", "fake/addition-v2", "other/zebra-v1"):
        registry.register(FakeDomain(name))
    with pytest.raises(KeyError, match=r"'fake' is a family of 2 domains; .*'fake/addition-v1'"):
        registry.get("fake")


def test_ids_are_sorted_and_all_follows_id_order() -> None:
    registry = DomainRegistry()
    for name in ("zz/b-v1", "aa/c-v1", "mm/a-v1"):
        registry.register(FakeDomain(name))
    assert registry.ids() == ["aa/c-v1", "mm/a-v1", "zz/b-v1"]
    assert [d.id for d in registry.all()] == registry.ids()


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A fake installed plugin module with an instance and a factory entry point."""
    module = types.ModuleType("fake_posttrain_plugin")
    module.INSTANCE = FakeDomain("plugin/instance-v1")  # type: ignore[attr-defined]
    module.Factory = lambda: FakeDomain("plugin/factory-v1")  # type: ignore[attr-defined]
    module.DomainClass = type(  # type: ignore[attr-defined]
        "DomainClass",
        (FakeDomain,),
        {"__init__": lambda self: setattr(self, "id", "plugin/cls-v1")},
    )
    monkeypatch.setitem(sys.modules, module.__name__, module)
    points = [
        EntryPoint("instance", f"{module.__name__}:INSTANCE", ENTRY_POINT_GROUP),
        EntryPoint("factory", f"{module.__name__}:Factory", ENTRY_POINT_GROUP),
        EntryPoint("class", f"{module.__name__}:DomainClass", ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr(
        registry_module,
        "entry_points",
        lambda group: points if group == ENTRY_POINT_GROUP else [],
    )
    return module


def test_load_entry_points_registers_instances_factories_and_classes(
    plugin: types.ModuleType,
) -> None:
    registry = DomainRegistry()
    added = registry.load_entry_points()
    assert added == ["plugin/instance-v1", "plugin/factory-v1", "plugin/cls-v1"]
    assert registry.get("plugin/instance-v1") is plugin.INSTANCE


def test_load_entry_points_twice_is_safe(plugin: types.ModuleType) -> None:
    registry = DomainRegistry()
    registry.load_entry_points()
    assert registry.load_entry_points() == []
    assert len(registry.ids()) == 3


def test_load_entry_points_accepts_a_domain_the_plugin_registered_itself(
    plugin: types.ModuleType,
) -> None:
    registry = DomainRegistry()
    registry.register(plugin.INSTANCE)
    assert registry.load_entry_points() == ["plugin/factory-v1", "plugin/cls-v1"]


def test_broken_entry_point_raises_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = EntryPoint("broken", "no_such_module_for_posttrain:X", ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry_module, "entry_points", lambda group: [broken])
    with pytest.raises(RuntimeError, match="'broken'"):
        DomainRegistry().load_entry_points()


def test_broken_entry_point_does_not_stop_the_others_loading(
    monkeypatch: pytest.MonkeyPatch, plugin: types.ModuleType
) -> None:
    points = [
        EntryPoint("broken", "no_such_module_for_posttrain:X", ENTRY_POINT_GROUP),
        EntryPoint("instance", f"{plugin.__name__}:INSTANCE", ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr(registry_module, "entry_points", lambda group: points)
    registry = DomainRegistry()
    with pytest.raises(RuntimeError, match="'broken'"):
        registry.load_entry_points()
    assert registry.get("plugin/instance-v1") is plugin.INSTANCE


def test_entry_point_clashing_with_a_registered_id_raises_naming_it(
    monkeypatch: pytest.MonkeyPatch, plugin: types.ModuleType
) -> None:
    point = EntryPoint("clash", f"{plugin.__name__}:Factory", ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry_module, "entry_points", lambda group: [point])
    registry = DomainRegistry()
    registry.register(FakeDomain("plugin/factory-v1"))
    with pytest.raises(RuntimeError, match="entry point 'clash'.*already registered"):
        registry.load_entry_points()


def test_entry_point_giving_a_non_domain_raises_naming_it(
    monkeypatch: pytest.MonkeyPatch, plugin: types.ModuleType
) -> None:
    plugin.Factory = lambda: "not a domain"  # type: ignore[attr-defined]
    monkeypatch.setattr(
        registry_module,
        "entry_points",
        lambda group: [EntryPoint("factory", f"{plugin.__name__}:Factory", ENTRY_POINT_GROUP)],
    )
    with pytest.raises(RuntimeError, match="not a Domain"):
        DomainRegistry().load_entry_points()


def test_starter_domains_are_registered_on_import() -> None:
    assert set(STARTER_DOMAINS) <= set(domain_ids())
    assert all(isinstance(get_domain(i), Domain) for i in STARTER_DOMAINS)
    assert [d.id for d in all_domains()] == domain_ids()


def test_module_level_load_entry_points_is_safe_twice() -> None:
    before = domain_ids()
    registry_module.load_entry_points()
    registry_module.load_entry_points()
    assert set(before) <= set(domain_ids())


class SpannedDomain(FakeDomain):
    """A FakeDomain with a length span, as long-context domains have."""

    def __init__(self, domain_id: str, span: tuple[int, int] = (1_000, 1_000_000)) -> None:
        super().__init__(domain_id)
        self.span = span

    def with_span(self, low: int, high: int) -> SpannedDomain:
        if low < 16:
            raise ValueError("MIN must be at least 16 tokens")
        return SpannedDomain(f"{self.id}@{low}-{high}", (low, high))


def test_span_id_resolves_to_a_variant_kept_for_later_lookups() -> None:
    registry = DomainRegistry()
    registry.register(SpannedDomain("fake/long-v1"))
    variant = registry.get("fake/long-v1@64-512")
    assert isinstance(variant, SpannedDomain) and variant.span == (64, 512)
    assert registry.get("fake/long-v1@64-512") is variant
    assert registry.ids() == ["fake/long-v1"]


@pytest.mark.parametrize(
    ("domain_id", "message"),
    [
        ("fake/long-v1@64", "expected 'fake/long-v1@MIN-MAX'"),
        ("fake/long-v1@512-64", "need 0 < MIN <= MAX"),
        ("fake/one-v1@64-512", "has no length span"),
        ("fake/lnog-v1@64-512", "did you mean 'fake/long-v1'"),
        ("fake/long-v1@064-512", "expected 'fake/long-v1@MIN-MAX'"),
        ("fake/long-v1@8-512", "MIN must be at least 16"),
    ],
)
def test_bad_span_ids_say_what_is_wrong(domain_id: str, message: str) -> None:
    registry = DomainRegistry()
    registry.register(SpannedDomain("fake/long-v1"))
    registry.register(FakeDomain("fake/one-v1"))
    with pytest.raises(KeyError, match=message):
        registry.get(domain_id)
