"""Code that runs *inside* a sandbox: standard library only, bound read-only at
/opt/posttrain/inside and started as `python3 -S -m inside.server`.

`framing` is shared with the host (one wire format, one place); `files` keeps host
requests inside the workspace; `tasks` forks, limits and cleans up after each task;
`sessions` keeps long-lived interpreters with fork snapshots; `server` is the loop.
"""
