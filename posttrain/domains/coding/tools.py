"""`CodingSession`: one episode's workspace and its tools (shell, read_file, write_file, apply_patch).

The workspace lives on the host as a sandbox `Snapshot` (files, folders, modes). File
tools edit it directly; `shell` leases a sandbox from a shared pool, restores the
workspace into it, runs `/bin/sh -c COMMAND` in `/workspace`, and keeps the workspace
the command left behind. A lease lasts one call, so any number of sessions can be open
at once (the episode loop opens a batch's sessions together) without exhausting the pool.

    session = CodingSession(task.files)
    session.call(ToolCall("shell", {"command": "python3 -m pytest -x -q"}))
    session.history      # the workspace after each call (per-turn feedback uses it)

Budgets: each observation is cut to `OBSERVATION_CHARS` (head and tail kept), all
observations together to `EPISODE_CHARS`, the calls to `MAX_CALLS`; past a budget a
call returns an error observation. Bad calls are `Observation(error=True)`, never raised.

Not guaranteed: background processes do not survive between shell calls (each call is
a fresh task in a pooled sandbox); pooled sandboxes are shared by sessions one call at a
time (see `posttrain/sandbox/sandbox.py` on secrecy between tasks); symlinks the agent
makes are kept in the snapshot but not followed by the file tools.
"""

from __future__ import annotations

import glob
from typing import Any

from posttrain.domains.coding.patch import PatchError, apply_patch, clean_path
from posttrain.sandbox import SandboxError, SandboxSpec, Snapshot
from posttrain.sandbox.shared import shared_pool
from posttrain.tools.parse import function_schema
from posttrain.types import Message, Observation, ToolCall

SHELL_SPEC = SandboxSpec(memory_mb=768, timeout_s=20.0, max_processes=32, tmpfs_mb=64)
OBSERVATION_CHARS = 6000
EPISODE_CHARS = 120_000
MAX_CALLS = 60
MAX_WORKSPACE_BYTES = 8 << 20


def _schema(name: str, description: str, **props: str) -> dict[str, Any]:
    properties = {k: {"type": "string", "description": v} for k, v in props.items()}
    return function_schema(name, description, {"type": "object", "properties": properties, "required": list(props)})  # fmt: skip


SCHEMAS: dict[str, dict[str, Any]] = {
    "shell": _schema("shell", "Run a shell command in /workspace (sh -c); returns its exit code and output.",
                     command="e.g. `python3 -m pytest -x -q`, `cat f`, `grep -n x f`, `sed -n 1,20p f`"),
    "read_file": _schema("read_file", "Read a workspace file.", path="relative to /workspace"),
    "write_file": _schema("write_file", "Create or overwrite a workspace file.", path="relative to /workspace", content="the whole new file"),
    "apply_patch": _schema("apply_patch", "Apply a unified diff (--- a/path, +++ b/path, @@ hunks) to the workspace.", patch="the diff"),
}  # fmt: skip
TOOLS_HELP = (
    'Tools (call one with <tool_call>{"name": ..., "arguments": {...}}</tool_call>): '
    "shell(command) runs `sh -c command` in /workspace (python3, gcc, grep, sed, cat, ...); "
    "read_file(path); write_file(path, content); apply_patch(patch) applies a unified diff. "
    "When you are done, reply without a tool call."
)


def clip(text: str, limit: int = OBSERVATION_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - 2 * half} characters cut] ...\n{text[-half:]}"


class CodingSession:
    """The tools over one workspace; `history[k]` is the workspace after call k."""

    def __init__(self, files: dict[str, str], tools: tuple[str, ...] = tuple(SCHEMAS), shell_timeout: float = 20.0) -> None:  # fmt: skip
        self.initial = Snapshot.from_files(files)
        self.state = self.initial
        self.history: list[Snapshot] = []
        self.names = tools
        self.tools: list[dict[str, Any]] = [SCHEMAS[name] for name in tools]
        self.shell_timeout = shell_timeout
        self.chars = 0
        self.closed = False

    def files(self) -> dict[str, bytes]:
        """The workspace's regular files now."""
        return self.state.files()

    def call(self, tool_call: ToolCall) -> Observation:
        if self.closed:
            raise RuntimeError("call() on a closed CodingSession")
        args = tool_call.arguments if isinstance(tool_call.arguments, dict) else {}
        if len(self.history) >= MAX_CALLS or self.chars >= EPISODE_CHARS:
            self.history.append(self.state)
            return Observation("error: the episode's tool budget is spent", error=True)
        try:
            obs = self._dispatch(tool_call.name, args)
        except (PatchError, ValueError, KeyError) as exc:
            obs = Observation(f"error: {exc}", error=True)
        self.history.append(self.state)
        obs.content = clip(obs.content)
        self.chars += len(obs.content)
        return obs

    def _dispatch(self, name: str, args: dict[str, Any]) -> Observation:
        if name not in self.names:
            return Observation(f"error: unknown tool {name[:40]!r}; tools: {', '.join(self.names)}", error=True)  # fmt: skip
        wanted = {"shell": ("command",), "read_file": ("path",), "write_file": ("path", "content"), "apply_patch": ("patch",)}[name]  # fmt: skip
        missing = [k for k in wanted if not isinstance(args.get(k), str)]
        if missing:
            return Observation(f"error: {name} needs string argument(s) {', '.join(missing)}", error=True)  # fmt: skip
        if name == "shell":
            return self._shell(args["command"])
        if name == "read_file":
            path = clean_path(args["path"]) or ""
            data = self.files().get(path)
            if data is None:
                return Observation(f"error: {path}: no such file", error=True)
            return Observation(data.decode(errors="replace"))
        if name == "write_file":
            path = clean_path(args["path"]) or ""
            self.state = self.state.with_files({path: args["content"]})
            return Observation(f"wrote {len(args['content'].encode())} bytes to {path}")
        texts = {p: b.decode() for p, b in self.files().items() if _is_text(b)}
        patched = apply_patch(texts, args["patch"])
        changed = {p: t for p, t in patched.items() if texts.get(p) != t}
        gone = [p for p in texts if p not in patched]
        # `drop` takes globs: escaped, a deleted `x[1].py` or `*.py` is that one file only.
        self.state = self.state.with_files(changed, drop=[glob.escape(p) for p in gone])
        return Observation(f"patched {', '.join(sorted(changed) + sorted(gone)) or 'nothing'}")

    def _shell(self, command: str) -> Observation:
        try:
            with shared_pool("coding-shell", SHELL_SPEC, size=2, max_tasks=500).lease(
                timeout=120
            ) as sandbox:
                sandbox.restore(self.state)
                result = sandbox.exec(["/bin/sh", "-c", command], timeout=self.shell_timeout)
                try:  # refused before it is read when the files are too large
                    after: Snapshot | None = sandbox.snapshot(max_bytes=MAX_WORKSPACE_BYTES)
                except ValueError:
                    after = None
        except (SandboxError, TimeoutError) as exc:
            return Observation(f"error: the sandbox failed ({exc}); try again", error=True)
        if after is None or len(after.archive) > MAX_WORKSPACE_BYTES:
            note = "\n[the workspace grew past 8 MB; the command's file changes were discarded]"
        else:
            self.state, note = after, ""
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        output = (result.stdout + result.stderr).rstrip()
        return Observation(f"[{status}]\n{clip(output, OBSERVATION_CHARS - 200)}{note}", error=result.timed_out or result.error is not None)  # fmt: skip

    def user_turn(self, assistant_message: Message) -> Message | None:
        """No scripted user: the episode ends at the first reply without a tool call."""
        return None

    def snapshot(self) -> tuple[Snapshot, int]:
        return self.state, len(self.history)

    def restore(self, snapshot: Any) -> None:
        self.state, length = snapshot
        del self.history[length:]

    def close(self) -> None:
        self.closed = True


def _is_text(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
