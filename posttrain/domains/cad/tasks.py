"""The OpenSCAD domains: write a part from its spec, write it with a `render` tool, modify one.

- `cad/openscad-part-v2` (single turn): the spec of a part (parts.py) in words and
  numbers; the answer is OpenSCAD source.
- `cad/openscad-render-v2` (multi-turn): the same kind of spec, with a `render` tool
  that compiles source in the sandbox and returns the compiler's errors, or the
  bounding box, volume, through-hole count and the top and front silhouettes as text;
  the final source must be one that was rendered (execute → observe → correct).
- `cad/openscad-modify-v2` (single turn): an existing model's source and one change
  (a hole size, a thickness, one more column of holes, a taller leg ...); the answer
  is the whole modified source. Every change moves a feature that the size check or
  a probe sees, so the original source handed back unchanged fails.

Every answer is compiled by OpenSCAD inside the sandbox (openscad.py) and judged
against the reference solid (judge.py: watertight, bounding box, volume, probes of
holes and walls, hole count, symmetry, volume IoU, silhouette IoU). The final text
must be the source alone, without Markdown fences. Difficulty d asks for 3 + (d - 1) // 2
holes and slots (`difficulty_measure`). Corruptions: a wrong dimension (scaled 15% along x),
a missing hole, a non-manifold extra (two cubes sharing one edge), source that does
not compile.

Not guaranteed: an environment without `openscad` (or without a sandbox) makes every
verdict a verifier error, never a wrong answer; verification takes 0.3–2 s per answer.
"""

from __future__ import annotations

import copy
import random
from abc import ABC, abstractmethod
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.domains.cad.csg import to_scad
from posttrain.domains.cad.judge import judge_part, reference_solid
from posttrain.domains.cad.openscad import compile_scad
from posttrain.domains.cad.parts import KINDS, PartSpec, draw_params, make_part
from posttrain.tools.parse import format_tool_call, function_schema
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict
from posttrain.verify.geometry import bounds_of, load_stl, text_silhouette

SCAD_RULES = (
    "Units are millimetres. Model round features with at least 32 segments (for example "
    "`$fn = 32;` at the top). Reply with the complete OpenSCAD source only: no prose and no "
    "Markdown code fences. It must compile to one watertight solid."
)


def scad_source(part: PartSpec) -> str:
    return f"// {part.kind}\n$fn = 32;\n{to_scad(part.tree)}\n"


def part_meta(part: PartSpec) -> dict[str, Any]:
    return {"kind": part.kind, "params": part.params, "tree": part.tree, "probes": part.probes, "genus": part.genus}  # fmt: skip


def features_for(difficulty: int) -> int:
    """Holes and slots at `difficulty`: 3 at d=1 up to 7 at d=9-10. Fewer than the CSG
    domains' d + 2 because OpenSCAD's CGAL kernel slows down steeply with round holes."""
    return 3 + (difficulty - 1) // 2


def judge_scad(task: Task, source: str) -> Verdict:
    """Compile `source` in the sandbox and judge it against the task's part; never raises."""
    zero = {"compiles": 0.0}
    if not isinstance(source, str) or not source.strip():
        return Verdict(0.0, False, "The final text is empty.", zero)
    if "```" in source:
        return Verdict(0.0, False, "The answer must be bare OpenSCAD source, without Markdown fences.", zero)  # fmt: skip
    try:
        result = compile_scad(source)
        if result.error:
            return Verdict(0.0, False, "OpenSCAD could not be run.", zero, error=result.error)
        if result.stl is None:
            return Verdict(0.0, False, f"The source does not compile: {result.log[:300]}", zero)
        verdict = judge_part(task.meta["part"], load_stl(result.stl))
    except Exception as exc:  # a verifier bug, not a wrong answer
        return Verdict(0.0, False, "The verifier failed.", zero, error=f"{type(exc).__name__}: {exc}")  # fmt: skip
    verdict.components = {"compiles": 1.0, **verdict.components}
    return verdict


def scad_corruptions(source: str, part: dict[str, Any]) -> list[str]:
    """Wrong dimension, missing hole, a non-manifold extra, and source that does not compile."""
    tree = copy.deepcopy(part["tree"])
    tree["children"] = tree["children"][:-1]
    missing = f"$fn = 32;\n{to_scad(tree)}\n"
    box = bounds_of(reference_solid(part))
    x = box[3] + 20
    edge_pair = f"translate([{x:g}, 0, 0]) cube(10);\ntranslate([{x + 10:g}, 10, 0]) cube(10);\n"
    return [
        f"scale([1.15, 1, 1]) {{\n{source}\n}}\n",
        missing,
        source + edge_pair,
        source.rstrip().rstrip("}") + "\n",
    ]


class _ScadDomain(ABC):
    axes = Axes("geometry", "cad_kernel", "single", "geometry")
    max_turns = 1
    id: str

    @abstractmethod
    def generate(self, seed: int, difficulty: int) -> Task:
        """Each OpenSCAD task kind writes its own prompt around a drawn part."""

    def _part(self, rng: random.Random, difficulty: int) -> PartSpec:
        kind = KINDS[rng.randrange(len(KINDS))]
        return make_part(kind, draw_params(kind, rng, features_for(difficulty)))

    def reference(self, task: Task) -> Reference:
        return Reference.single(task.answer)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        return judge_scad(task, rollout.final_text)

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        return [Reference.single(t) for t in scad_corruptions(task.answer, task.meta["part"])]

    def difficulty_measure(self, task: Task) -> float:
        return float(task.meta["measure"])


class OpenScadPartDomain(_ScadDomain):
    """Write OpenSCAD for a part spec."""

    id = "cad/openscad-part-v2"

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        part = self._part(task_rng(self.id, seed, difficulty), difficulty)
        prompt = f"Write an OpenSCAD model of this part.\n\n{part.text}\n\n{SCAD_RULES}"
        return Task(task_id(self.id, seed, difficulty), self.id, [Message("user", prompt)], scad_source(part), difficulty, seed, meta={"part": part_meta(part), "measure": float(part.features)})  # fmt: skip


# ----------------------------------------------------------------------------- render tool

RENDER_SCHEMA = function_schema(
    "render",
    "Compile OpenSCAD source and describe the result: errors, or the bounding box, volume, "
    "through-hole count and top and front silhouettes.",
    {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
)


def describe_render(source: str) -> Observation:
    """What the `render` tool shows for `source`."""
    result = compile_scad(source)
    if result.error:
        return Observation(f"error: the renderer is unavailable ({result.error[:200]})", error=True)
    if result.stl is None:
        return Observation(f"compile failed:\n{result.log}", error=True)
    mesh = load_stl(result.stl)
    lines = [f"compiled: {mesh.triangles} triangles" + (f"; warnings:\n{result.log}" if result.log else "")]  # fmt: skip
    if mesh.manifold is None:
        lines.append(f"not a valid solid: {mesh.problem}")
        return Observation("\n".join(lines))
    box = bounds_of(mesh.manifold)
    lines.append(f"bounding box: x {box[0]:.4g}..{box[3]:.4g}, y {box[1]:.4g}..{box[4]:.4g}, z {box[2]:.4g}..{box[5]:.4g} mm")  # fmt: skip
    lines.append(f"volume: {mesh.manifold.volume():.6g} mm^3; through holes (genus): {mesh.manifold.genus()}")  # fmt: skip
    lines.append(text_silhouette(mesh.manifold, "top", 40))
    lines.append(text_silhouette(mesh.manifold, "front", 40))
    return Observation("\n".join(lines))


class RenderSession:
    """One episode's `render` tool; remembers which sources compiled."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.tools: list[dict[str, Any]] = [copy.deepcopy(RENDER_SCHEMA)]
        self.rendered: list[str] = []

    def call(self, tool_call: ToolCall) -> Observation:
        args = tool_call.arguments if isinstance(tool_call.arguments, dict) else {}
        if tool_call.name != "render":
            return Observation(f"error: unknown tool {tool_call.name[:40]!r}; the only tool is 'render'", error=True)  # fmt: skip
        code = args.get("code")
        if not isinstance(code, str) or not code.strip():
            return Observation("error: render needs a non-empty string argument 'code'", error=True)  # fmt: skip
        observation = describe_render(code)
        if not observation.error:
            self.rendered.append(code.strip())
        return observation

    def user_turn(self, assistant_message: Message) -> Message | None:
        return None

    def snapshot(self) -> list[str]:
        return list(self.rendered)

    def restore(self, snapshot: Any) -> None:
        self.rendered = list(snapshot)

    def close(self) -> None:
        pass


def _render_turn(code: str) -> Message:
    call = ToolCall("render", {"code": code}, id="call_0")
    return Message("assistant", format_tool_call(call), tool_calls=[call])


def _rendered_in(rollout: Rollout, source: str) -> bool:
    """Did some turn call `render` on exactly this source? (The verdict then re-compiles it.)"""
    wanted = source.strip()
    return any(
        call.name == "render"
        and isinstance(call.arguments, dict)
        and str(call.arguments.get("code", "")).strip() == wanted  # fmt: skip
        for turn in rollout.turns
        for call in turn.tool_calls
    )


class OpenScadRenderDomain(_ScadDomain):
    """Write OpenSCAD for a part spec, checking drafts with the `render` tool."""

    id = "cad/openscad-render-v2"
    axes = Axes("geometry", "cad_kernel", "multi", "geometry")
    max_turns = 6

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        part = self._part(task_rng(self.id, seed, difficulty), difficulty)
        prompt = (
            f"Write an OpenSCAD model of this part.\n\n{part.text}\n\nYou have a `render` tool: call it with "
            f"your source to see compile errors, or the bounding box, volume, through-hole count and top and "
            f"front silhouettes. Render your final source before you answer; your final message must be "
            f"exactly the source you last rendered successfully.\n\n{SCAD_RULES}"
        )
        return Task(task_id(self.id, seed, difficulty), self.id, [Message("user", prompt)], scad_source(part), difficulty, seed, meta={"part": part_meta(part), "measure": float(part.features)})  # fmt: skip

    def open(self, task: Task, sandbox: object | None = None) -> RenderSession:
        return RenderSession(task)

    def reference(self, task: Task) -> Reference:
        return Reference([_render_turn(task.answer), Message("assistant", task.answer)])

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        verdict = judge_scad(task, rollout.final_text)
        if verdict.error or not verdict.components.get("compiles"):
            return verdict
        rendered = _rendered_in(rollout, rollout.final_text)
        verdict.components["rendered"] = float(rendered)
        if not rendered:
            verdict.passed = False
            verdict.reward = min(verdict.reward, 0.5)
            verdict.reason += " The final source was never rendered with the tool."
        return verdict

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        wrong = [Reference([_render_turn(t), Message("assistant", t)]) for t in scad_corruptions(task.answer, task.meta["part"])]  # fmt: skip
        return [*wrong, Reference.single(task.answer)]


# ----------------------------------------------------------------------------- modify

_CHANGES: dict[str, list[tuple[str, tuple[float, ...], str]]] = {
    "plate": [
        ("hole_d", (-1, 1, 2), "Change the diameter of every hole to {v:g} mm."),
        ("t", (1, 2, 3), "Make the plate {v:g} mm thick (the holes still go through)."),
        (
            "cols",
            (1,),
            "Add one more column of holes, {v:g} columns in all: same spacing and margins, so the plate grows by one spacing along x.",
        ),
    ],  # fmt: skip
    "bracket": [
        ("hole_d", (-1, 1), "Change the diameter of every hole to {v:g} mm."),
        (
            "height",
            (5, 10),
            "Make the upright leg {v:g} mm tall; its holes stay midway between the base's top face and the upright's top.",
        ),
        (
            "depth",
            (5, 10),
            "Make the base leg {v:g} mm deep (y); its holes stay midway between the upright's face and the far edge.",
        ),
    ],  # fmt: skip
    "flange": [
        ("bolt_d", (-1, 1), "Change the bolt holes' diameter to {v:g} mm."),
        ("bore", (-2, 2), "Change the bore's diameter to {v:g} mm."),
        (
            "t",
            (1, 2),
            "Make the disc {v:g} mm thick (a hub, if any, still rises the same height above the disc).",
        ),
    ],  # fmt: skip
    "enclosure": [
        (
            "wall",
            (0.5, 1.0),
            "Make the side walls {v:g} mm thick, keeping the outside size (the cavity shrinks).",
        ),
        ("cable_d", (-2, 2), "Change the cable hole's diameter to {v:g} mm."),
        (
            "z",
            (5, 10),
            "Make the box {v:g} mm high; the cable hole stays midway between the floor's top face and the rim.",
        ),
    ],  # fmt: skip
    "shaft": [
        ("key_w", (-1, 1), "Make the keyway {v:g} mm wide, still centred on y = 0."),
        ("key_depth", (0.5, 1.0), "Make the keyway {v:g} mm deep."),
        ("d2", (-2,), "Reduce the journal's diameter to {v:g} mm."),
    ],  # fmt: skip
    "standoffs": [
        ("post_h", (2, 4), "Make the standoffs {v:g} mm tall above the plate's top face."),
        ("hole_d", (-1, 1), "Change the standoffs' hole diameter to {v:g} mm."),
        (
            "t",
            (1, 2),
            "Make the base plate {v:g} mm thick; the standoffs still rise {h:g} mm above it.",
        ),
    ],  # fmt: skip
}


class OpenScadModifyDomain(_ScadDomain):
    """Change an existing OpenSCAD model to meet one changed requirement."""

    id = "cad/openscad-modify-v2"

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        rng = task_rng(self.id, seed, difficulty)
        kind = KINDS[rng.randrange(len(KINDS))]
        params = draw_params(kind, rng, features_for(difficulty))
        old = make_part(kind, params)
        name, deltas, words = _CHANGES[kind][rng.randrange(len(_CHANGES[kind]))]
        changed = dict(params)
        changed[name] = params[name] + deltas[rng.randrange(len(deltas))]
        new = make_part(kind, changed)
        change = words.format(v=changed[name], h=params.get("post_h", 0))
        prompt = (
            f"Here is an OpenSCAD model of a {kind} part:\n\n{scad_source(old)}\nChange it as follows: {change} "
            f"Everything else stays as it is.\n\n{SCAD_RULES}"
        )
        meta = {"part": part_meta(new), "original": scad_source(old), "change": change, "measure": float(old.features)}  # fmt: skip
        return Task(task_id(self.id, seed, difficulty), self.id, [Message("user", prompt)], scad_source(new), difficulty, seed, meta=meta)  # fmt: skip

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """The standard four, and the original model handed back unchanged."""
        wrong = scad_corruptions(task.answer, task.meta["part"]) + [task.meta["original"]]
        return [Reference.single(t) for t in wrong]


DOMAINS: tuple[_ScadDomain, ...] = (OpenScadPartDomain(), OpenScadRenderDomain(), OpenScadModifyDomain())  # fmt: skip
