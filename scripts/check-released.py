#!/usr/bin/env python3
"""Fails when a released change's deploy script differs from what its release shipped.

A change that precedes the plan's last tag was released with that tag: a database deployed at the
tag has run its deploy script and will never run it again. Editing that script in place changes
nothing in such a database, so the edit must be a `sqitch rework` (a new instance after the tag,
the released script kept as <change>@<tag>.sql). This compares, for every change instance before
the last tag, the deploy script sqitch would run for it now with the one it ran at the commit
that introduced the tag line. Usage: check-released.py [--plan sqitch.plan]. Exit 0 ok, 1 drift,
2 usage or git errors.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def plan_entries(text: str) -> list[tuple[str, str]]:
    """(kind, name) for each change ('change') and tag ('tag') line, in plan order."""
    entries = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("%", "#")):
            continue
        name = stripped.split()[0]
        entries.append(("tag", name[1:]) if name.startswith("@") else ("change", name))
    return entries


def instance_files(entries: list[tuple[str, str]], exists) -> list[tuple[int, str, str]]:
    """(position, change, deploy path) of every change instance, resolved as sqitch resolves it:
    the last instance of a change uses deploy/<change>.sql; an earlier one the first
    deploy/<change>@<tag>.sql that exists among the tags between it and the next instance."""
    out = []
    for pos, (kind, name) in enumerate(entries):
        if kind != "change":
            continue
        later = [p for p in range(pos + 1, len(entries)) if entries[p] == ("change", name)]
        if not later:
            out.append((pos, name, f"deploy/{name}.sql"))
            continue
        tags = [entries[p][1] for p in range(pos + 1, later[0]) if entries[p][0] == "tag"]
        path = next((f"deploy/{name}@{t}.sql" for t in tags if exists(f"deploy/{name}@{t}.sql")), None)
        out.append((pos, name, path or f"deploy/{name}@{tags[0] if tags else '?'}.sql"))
    return out


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def main() -> int:
    plan_path = Path(sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--plan" else "sqitch.plan")
    plan_text = plan_path.read_text()
    entries = plan_entries(plan_text)
    tags = [p for p, (kind, _) in enumerate(entries) if kind == "tag"]
    if not tags:
        print("check-released: no tag in the plan, nothing released")
        return 0
    last = tags[-1]
    tag_line = next(line for line in plan_text.splitlines() if line.startswith("@" + entries[last][1] + " "))
    try:
        commits = git("log", "--format=%H", "-S" + tag_line, "--", str(plan_path)).split()
    except subprocess.CalledProcessError as exc:
        print(f"check-released: git failed: {exc.stderr.strip()}", file=sys.stderr)
        return 2
    if not commits:
        print(f"check-released: @{entries[last][1]} is not committed yet; nothing to compare")
        return 0
    tag_commit = commits[-1]

    def exists_at_commit(path: str) -> bool:
        return subprocess.run(["git", "cat-file", "-e", f"{tag_commit}:{path}"], capture_output=True).returncode == 0

    released_entries = plan_entries(git("show", f"{tag_commit}:{plan_path}"))
    released = {}
    seen: dict[str, int] = {}
    for pos, name, path in instance_files(released_entries, exists_at_commit):
        seen[name] = seen.get(name, 0) + 1
        released[(name, seen[name])] = path

    drift = []
    seen = {}
    for pos, name, path in instance_files(entries, lambda p: Path(p).exists()):
        seen[name] = seen.get(name, 0) + 1
        if pos > last:
            continue
        then_path = released.get((name, seen[name]))
        if then_path is None:
            drift.append(f"{name}: not in the plan at @{entries[last][1]} ({tag_commit[:8]}), yet placed before the tag")
            continue
        then = git("show", f"{tag_commit}:{then_path}")
        now = Path(path).read_text() if Path(path).exists() else None
        if now != then:
            drift.append(f"{name}: {path} differs from {then_path} as released at @{entries[last][1]} ({tag_commit[:8]})")
    if drift:
        print("check-released: deploy scripts of released changes were edited in place; "
              "restore them and `sqitch rework` the change instead:", file=sys.stderr)
        for line in drift:
            print("  " + line, file=sys.stderr)
        return 1
    count = sum(1 for pos, *_ in instance_files(entries, lambda p: Path(p).exists()) if pos < last)
    print(f"check-released: {count} changes released up to @{entries[last][1]} match their released deploy scripts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
