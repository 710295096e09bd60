"""Every grant a current deploy script makes goes through ctxgraph._grant.

The group roles are named in one place, ctxgraph.group_roles (table_group_roles): renaming one is
an UPDATE there plus ALTER ROLE, and every change deployed after it grants by kind. A current deploy
script (the one sqitch runs for a change's last instance) of a change planned after
table_group_roles that spells a role name in a GRANT or REVOKE would fail on a database whose roles
were renamed. Static: no database needed.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GROUP_ROLE = re.compile(r"\b(?:TO|FROM)\s+(?:[\w\s,]*,\s*)?ctxgraph_(?:writer|scorer|ranker|analyst)\b", re.I)


def plan_changes() -> list[str]:
    """Change names in plan order (one per instance; tags and pragmas left out)."""
    names = []
    for line in (ROOT / "sqitch.plan").read_text().splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("%", "#", "@")):
            names.append(stripped.split()[0])
    return names


def statements_without_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def current_scripts_after_helper() -> list[str]:
    """The changes whose last instance is planned after table_group_roles."""
    names = plan_changes()
    helper = names.index("table_group_roles")
    last = {name: pos for pos, name in enumerate(names)}
    return sorted(name for name, pos in last.items() if pos > helper)


def test_most_current_scripts_come_after_the_helper():
    assert len(current_scripts_after_helper()) >= 39


def test_current_deploy_scripts_grant_through_the_role_helper():
    by_hand = {}
    for change in current_scripts_after_helper():
        text = statements_without_comments((ROOT / "deploy" / f"{change}.sql").read_text())
        hits = [m.group(0) for m in GROUP_ROLE.finditer(text)]
        if hits:
            by_hand[change] = hits
    assert by_hand == {}, f"grants that spell a role name instead of ctxgraph._grant(what, kinds): {by_hand}"


def test_the_pattern_finds_a_grant_by_hand():
    assert GROUP_ROLE.search("GRANT EXECUTE ON FUNCTION f() TO ctxgraph_writer;")
    assert GROUP_ROLE.search("GRANT SELECT ON t\n    TO ctxgraph_ranker, ctxgraph_analyst;")
    assert GROUP_ROLE.search("REVOKE ALL ON t FROM ctxgraph_scorer;")
    assert not GROUP_ROLE.search("PERFORM ctxgraph._grant('SELECT ON t', '{analyst}');")


def test_ingest_staging_has_one_current_definition():
    defining = [change for change in current_scripts_after_helper()
                if re.search(r"CREATE (?:OR REPLACE )?FUNCTION ctxgraph\.ingest_staging\(",
                             statements_without_comments((ROOT / "deploy" / f"{change}.sql").read_text()))]
    assert defining == ["privileges_write_path"]
