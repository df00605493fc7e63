"""The domain registry: versioned ids to `Domain` instances, explicit and checked.

Domains register under an id of the form `family/name-vN` (`arith/addition-v1`);
`posttrain.domains` registers the built-in ones at import, and
`load_entry_points()` adds third-party domains published in the
`posttrain.domains` entry-point group (each entry point names a `Domain` instance
or a zero-argument factory returning one). Look-ups by unknown id fail with the
closest registered ids in the message.

Use the module functions (`register`, `get_domain`, ...) for the process-wide
registry; `DomainRegistry()` makes a private one (tests do).

A long-context domain that offers `with_span(min_tokens, max_tokens)` can also be
looked up as `family/name-vN@MIN-MAX` (`longctx/needle-v1@64-512`): the same task
kind with its length schedule moved to that span of tokens (difficulty 1 = MIN,
10 = MAX). Span variants are parameters of one domain, so `ids()` and `all()` list
only the base domain; a looked-up variant is kept so the same object comes back.

Not guaranteed: registration checks the id and that the object has the `Domain`
attributes, not that the domain behaves; `posttrain domains check` does that.
The registry is not locked: register from one thread, at start-up.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points

from posttrain.domains.base import Domain

ENTRY_POINT_GROUP = "posttrain.domains"
DOMAIN_ID = re.compile(r"[a-z0-9][a-z0-9_-]*/[a-z0-9][a-z0-9_.-]*-v[0-9]+")
SPAN_SUFFIX = re.compile(r"@([1-9][0-9]*)-([1-9][0-9]*)")  # no leading zeros: one id per span


class DomainRegistry:
    """Domains by id, plus the entry points already loaded into it."""

    def __init__(self) -> None:
        self._domains: dict[str, Domain] = {}
        self._spans: dict[str, Domain] = {}
        self._loaded_entry_points: set[tuple[str, str]] = set()

    def register(self, domain: Domain) -> Domain:
        """Add `domain` under its id and return it. Raises ValueError on a malformed
        or already registered id, TypeError when `domain` is not a Domain."""
        if isinstance(domain, type) or not isinstance(domain, Domain):
            raise TypeError(
                f"expected a Domain instance (id, axes, max_turns, generate, reference, "
                f"verify), got {domain!r}"
            )
        domain_id = domain.id
        if not isinstance(domain_id, str) or not DOMAIN_ID.fullmatch(domain_id):
            raise ValueError(
                f"domain id must look like 'family/name-vN' (lowercase), got {domain_id!r}"
            )
        if domain_id in self._domains:
            raise ValueError(
                f"domain id {domain_id!r} is already registered; bump its version to "
                "register a changed domain"
            )
        self._domains[domain_id] = domain
        return domain

    def get(self, domain_id: str) -> Domain:
        """The domain registered as `domain_id`; KeyError naming the closest ids if none."""
        try:
            return self._domains[domain_id]
        except (KeyError, TypeError):
            pass
        if isinstance(domain_id, str) and "@" in domain_id:
            return self._span_variant(domain_id)
        close = difflib.get_close_matches(str(domain_id), list(self._domains), n=3)
        family = [d for d in self._domains if d.startswith(f"{domain_id}/")]
        if family:
            hint = (
                f"{domain_id!r} is a family of {len(family)} domains; name domain ids such "
                f"as {family[0]!r} (`posttrain domains list --family {domain_id}`)."
            )
        elif close:
            hint = f"did you mean {', '.join(repr(c) for c in close)}?"
        else:
            hint = (
                f"{len(self._domains)} domains are registered; "
                "see `posttrain domains list` (or domain_ids())."
            )
        raise KeyError(f"unknown domain id {domain_id!r}; {hint}")

    def _span_variant(self, domain_id: str) -> Domain:
        if domain_id in self._spans:
            return self._spans[domain_id]
        base_id, _, suffix = domain_id.partition("@")
        base = self.get(base_id)
        match = SPAN_SUFFIX.fullmatch("@" + suffix)
        if match is None:
            raise KeyError(
                f"bad span in domain id {domain_id!r}: expected '{base_id}@MIN-MAX' "
                "with MIN and MAX in tokens, e.g. '@64-512'"
            )
        with_span = getattr(base, "with_span", None)
        if with_span is None:
            raise KeyError(
                f"domain {base_id!r} has no length span; '@MIN-MAX' works only for "
                "long-context domains (those with a with_span method)"
            )
        low, high = int(match.group(1)), int(match.group(2))
        if not 0 < low <= high:
            raise KeyError(f"bad span in domain id {domain_id!r}: need 0 < MIN <= MAX tokens")
        try:
            variant: Domain = with_span(low, high)
        except ValueError as exc:  # the domain's own limits, e.g. MIN >= 16 tokens
            raise KeyError(f"bad span in domain id {domain_id!r}: {exc}") from None
        if variant.id != domain_id:
            raise RuntimeError(f"{base_id}.with_span gave id {variant.id!r}, not {domain_id!r}")
        self._spans[domain_id] = variant
        return variant

    def ids(self) -> list[str]:
        """Every registered id, sorted."""
        return sorted(self._domains)

    def all(self) -> list[Domain]:
        """Every registered domain, in id order."""
        return [self._domains[i] for i in self.ids()]

    def load_entry_points(self) -> list[str]:
        """Register the domains of the `posttrain.domains` entry-point group and return
        the ids added by this call. Entry points already loaded are skipped, so calling
        twice is safe. Broken entry points (failing to load, not a Domain, a clashing id)
        do not stop the others from loading; then one RuntimeError names each of them."""
        added: list[str] = []
        broken: list[str] = []
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            key = (ep.name, ep.value)
            if key in self._loaded_entry_points:
                continue
            try:
                domain = _domain_from_entry_point(ep)
                # A plugin may also register itself on import; the same object twice is fine.
                if self._domains.get(domain.id) is not domain:
                    self.register(domain)
                    added.append(domain.id)
            except (RuntimeError, ValueError, TypeError) as exc:
                broken.append(str(exc) if isinstance(exc, RuntimeError) else f"{_where(ep)}: {exc}")
                continue
            self._loaded_entry_points.add(key)
        if broken:
            raise RuntimeError("; ".join(broken))
        return added


def _where(ep: EntryPoint) -> str:
    return f"entry point {ep.name!r} ({ep.value}) in group {ENTRY_POINT_GROUP!r}"


def _domain_from_entry_point(ep: EntryPoint) -> Domain:
    where = _where(ep)
    try:
        target: object = ep.load()
        if isinstance(target, type) or not isinstance(target, Domain):
            if not callable(target):
                raise TypeError(f"{target!r} is neither a Domain nor a factory of one")
            factory: Callable[[], object] = target
            target = factory()
    except Exception as exc:
        raise RuntimeError(f"{where} failed to load: {exc}") from exc
    if isinstance(target, type) or not isinstance(target, Domain):
        raise RuntimeError(f"{where} gave {target!r}, which is not a Domain")
    return target


_REGISTRY = DomainRegistry()


def register(domain: Domain) -> Domain:
    """Add `domain` to the process-wide registry and return it, as in
    `ADDITION = register(Addition())`. ValueError on a malformed or duplicate id."""
    return _REGISTRY.register(domain)


def get_domain(domain_id: str) -> Domain:
    """The registered domain `domain_id`; KeyError naming the closest ids if unknown."""
    return _REGISTRY.get(domain_id)


def domain_ids() -> list[str]:
    """Every registered domain id, sorted."""
    return _REGISTRY.ids()


def all_domains() -> list[Domain]:
    """Every registered domain, in id order."""
    return _REGISTRY.all()


def load_entry_points() -> list[str]:
    """Register third-party domains from the `posttrain.domains` entry points; returns
    the ids added. Safe to call more than once."""
    return _REGISTRY.load_entry_points()
