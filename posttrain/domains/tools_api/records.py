"""`tools/record-update-v1`: edit a simulated staff directory by API; the final state is judged.

The directory (`find`, `get`, `update`) holds fictional employees with a team, an
office and a level. The task asks for a conditional bulk move ("every member of
team A who works in office O goes to team B"), and from difficulty 4 a promotion
and from 7 a relocation of named people. The verdict compares the directory after
the rollout's calls with the expected one (`final_state`) and asks for the final
text `DONE`. `measure` = employees + operations.

Not guaranteed: the state is rebuilt by replaying the rollout's calls on a fresh
directory, so it is the calls that count, not what the live session reported;
extra edits that are undone later are not penalized.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.tools_api import services
from posttrain.domains.tools_api.framework import (
    ApiDomain,
    FinalAnswerApiDomain,
    Plan,
    Scenario,
    ToolError,
    ToolSpec,
    Trace,
    call,
    same_text,
)
from posttrain.types import Task, Verdict

FIELDS = ("name", "team", "office", "level")
EDITABLE = ("team", "office", "level")


def apply_update(staff: dict[str, Any], ident: str, field: str, value: str) -> dict[str, Any]:
    record = staff.get(ident.strip().upper())
    if record is None:
        raise ToolError(f"no employee with id {ident[:20]!r}; use find to get ids")
    if field not in EDITABLE:
        raise ToolError(f"field must be one of {', '.join(EDITABLE)}")
    if field == "level":
        if not re.fullmatch(r"[0-9]{1,2}", value.strip()) or not 1 <= int(value) <= 20:
            raise ToolError("level must be a whole number from 1 to 20")
        record["level"] = int(value)
    else:
        record[field] = value.strip()
    return {"id": ident.strip().upper(), **record}


class RecordUpdateDomain(FinalAnswerApiDomain):
    """Apply a conditional bulk move (and edits of named people) to a staff directory."""

    id = "tools/record-update-v1"
    axes = Axes("text", "simulated_api", "multi", "final_state")
    tools = (
        ToolSpec(
            "find",
            "Ids of employees whose field equals the value.",
            (
                ("field", "string", "name, team, office or level"),
                ("value", "string", "value to match"),
            ),
        ),
        ToolSpec("get", "An employee's record.", (("id", "string", "employee id"),)),
        ToolSpec(
            "update",
            "Set a field (team, office or level) of an employee.",
            (
                ("id", "string", "employee id"),
                ("field", "string", "team, office or level"),
                ("value", "string", "new value"),
            ),
        ),
    )

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        namer = services.Namer(rng)
        teams = [namer.word(2) for _ in range(4)]
        offices = [namer.word(2) for _ in range(3)]
        source, target, office = teams[0], teams[1], offices[0]
        movers = 2 + difficulty // 4
        size = 8 + 3 * difficulty
        combos = [(t, o) for t in teams for o in offices if (t, o) != (source, office)]
        places = [(source, office)] * movers + [(source, offices[1]), (teams[2], office)]
        places += [rng.choice(combos) for _ in range(size - len(places))]
        rng.shuffle(places)
        staff: dict[str, dict[str, Any]] = {
            f"E{101 + i}": {
                "name": namer.person(),
                "team": t,
                "office": o,
                "level": rng.randint(1, 6),
            }
            for i, (t, o) in enumerate(places)
        }
        members = [i for i, r in staff.items() if r["team"] == source]
        moving = [i for i in members if staff[i]["office"] == office]
        plan: Plan = [
            [call("find", field="team", value=source)],
            [call("get", id=i) for i in members],
            [call("update", id=i, field="team", value=target) for i in moving],
        ]
        asks = [
            f"move every member of team {source} who works in the {office} office to team {target}"
        ]
        expected = copy.deepcopy(staff)
        for i in moving:
            expected[i]["team"] = target
        others = [i for i in staff if i not in moving]
        if difficulty >= 4:
            who = rng.choice(others)
            level = expected[who]["level"] + 1
            asks.append(f"raise the level of {staff[who]['name']} by one")
            plan += [[call("find", field="name", value=staff[who]["name"])], [call("get", id=who)]]
            plan.append([call("update", id=who, field="level", value=str(level))])
            expected[who]["level"] = level
        if difficulty >= 7:
            who = rng.choice(others)
            there = next(o for o in offices[1:] if o != expected[who]["office"])
            asks.append(f"move {staff[who]['name']} to the {there} office")
            plan += [[call("find", field="name", value=staff[who]["name"])]]
            plan.append([call("update", id=who, field="office", value=there)])
            expected[who]["office"] = there
        plan.append("DONE")
        steps = "\n".join(f"{n}. {text[0].upper()}{text[1:]}." for n, text in enumerate(asks, 1))
        prompt = (
            f"Update our staff directory (the people are fictional) with its tools:\n{steps}\n"
            "Change nothing else. When you are finished, reply with DONE only."
        )
        digest = hashlib.sha256(json.dumps(expected, sort_keys=True).encode()).hexdigest()[:16]
        meta = {"expected": expected, "moving": moving, "members": members, "teams": teams}
        world = {"staff": staff}
        return Scenario(prompt, digest, world, plan, size + len(asks), meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        staff = world["staff"]
        if name == "find":
            field, value = arguments["field"].strip(), arguments["value"].strip()
            if field not in FIELDS:
                raise ToolError(f"field must be one of {', '.join(FIELDS)}")
            return {
                "ids": [i for i, r in staff.items() if str(r[field]).casefold() == value.casefold()]
            }
        if name == "get":
            ident = arguments["id"].strip().upper()
            if ident not in staff:
                raise ToolError(f"no employee with id {ident[:20]!r}; use find to get ids")
            return {"id": ident, **staff[ident]}
        return apply_update(staff, arguments["id"], arguments["field"].strip(), arguments["value"])

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        format_ok = same_text(final, "DONE")
        state_ok = trace.world["staff"] == task.meta["expected"]
        changed = bool(trace.ok("update"))
        components = {
            "format": float(format_ok),
            "state": float(state_ok),
            "used_tool": float(changed),
        }
        passed = format_ok and state_ok and changed
        if passed:
            reason = "Correct: the directory ends exactly as asked."
        elif not changed:
            reason = "No update was made; the directory is unchanged."
        elif not state_ok:
            reason = "Wrong: the directory's final state differs from the one asked for."
        else:
            reason = "The directory is right, but the final text is not DONE."
        return Verdict(float(passed), passed, reason, components)

    def wrong(self, task: Task) -> list[Plan]:
        plan, members, teams = task.meta["plan"], task.meta["members"], task.meta["teams"]
        rest = plan[3:]
        moves = plan[2]
        everyone = [call("update", id=i, field="team", value=teams[1]) for i in members]
        elsewhere = [
            call("update", id=c["arguments"]["id"], field="team", value=teams[2]) for c in moves
        ]
        return [
            [*plan[:2], moves[:-1], *rest],
            [*plan[:2], everyone, *rest],
            ["DONE"],
            [*plan[:2], elsewhere, *rest],
        ]


DOMAINS: tuple[ApiDomain, ...] = (RecordUpdateDomain(),)
