"""The follow signal without a judge: did the script *do* what the tip prescribes, and avoid what it warns against?

A pure leaf module (no SQL, no model). The embedding cosine measures topic: a script about sshd
is close to every sshd tip, whichever direction it took. This signal reads direction instead:

- from the **tip**, the items it prescribes and the items it warns against: commands and their
  options (backticked spans, or a known command word followed by options), paths, settings
  (``Key value`` / ``key = value``, "mode 0440", "owned by root:root", "set Key to N"), bounds
  ("Key to 4 or lower", "at least 15"), services and other technical words. A clause that says "never", "do not", "avoid", "is redundant", the part after
  "instead of" / "rather than" / ", not", puts its items on the warned side; a negation ends at
  the clause (a colon, a semicolon, a dash, a comma before a new imperative). A clause that only
  calls something insufficient ("alone", "only changes", "does not update"), one or a parenthesis
  that only allows another way ("a drop-in is fine", "works as well") and the consequence after
  "so" / "because" / "which" prescribe nothing. Items in a parenthesised list or joined
  by "or" are alternatives: one of them is enough. The order a tip states ("A before B",
  "A, then B", "A first", "After A, B") becomes pairs of steps: items, a checking program or one
  the tip says to run (`named-checkconf`, "running `net-snmp-create-v3-user`"), a service it says
  to stop or start ("Stop `snmpd` before ...", "before starting `usbguard`"), a restart or reload.
  A tip is read up to :data:`MAX_TIP_CHARS`, and at most :data:`MAX_TIP_ITEMS` items a side are kept;
- from the **script**, what its executable lines do: line continuations joined, comments removed,
  code that certainly never runs dropped (the body of ``if false`` or ``while false``, the branches
  after ``if :``, what ``false &&`` skips, everything after an ``exit`` at the top level),
  the text of ``echo``/``printf`` and of logging helpers removed unless it is redirected into a
  file or piped into a command that writes or applies it (then it is file content), heredoc bodies kept as file content unless ``cat`` only prints
  them (usage text), commented-out lines of that content dropped, bodies of functions that are
  never called removed (a trap handler counts as called), simple ``NAME=value`` variables
  expanded; each line is placed where it runs (a function body at its first call), and the
  patterns a grep looks for or a sed replaces are set apart from what the line does;
- **agreement**: each item is looked for in that executable text (options with their case,
  ``-aG`` as ``-a -G``, ``service X restart`` as ``systemctl restart X``, ``install -m`` as
  ``chmod``); a prescribed ``Key value`` the script gives another value, or a value outside a
  bound, is a conflict, an order the script reverses is broken, and so is one whose first step
  only reports its failure (``nginx -t || true``, an ``if !`` that only warns) or, for a service
  to stop first, never comes; which matched is the evidence a reviewer reads, and a few
  numbers summarise it (:class:`Features`). A tip that names nothing specific falls back on its
  content words against the executable lines.

The package's modules: :mod:`.tips` reads the tip, :mod:`.scripts` the script, :mod:`.matching`
looks each item up. :mod:`ctxgraph.follow_signal.calibration` turns the numbers and the cosine into one calibrated probability.
:data:`SIGNAL_VERSION` names this extraction; stored features and calibrations carry it, and a
change to what this module extracts must change it.
"""

from ctxgraph.follow_signal.matching import FEATURE_NAMES, SIGNAL_VERSION, Features, agreement
from ctxgraph.follow_signal.scripts import MAX_SCRIPT_CHARS, ScriptView, bounded_script, extract_script
from ctxgraph.follow_signal.tips import MAX_TIP_CHARS, MAX_TIP_ITEMS, Item, TipItems, bounded_tip, extract_tip

__all__ = [
    "FEATURE_NAMES",
    "MAX_SCRIPT_CHARS",
    "MAX_TIP_CHARS",
    "MAX_TIP_ITEMS",
    "SIGNAL_VERSION",
    "Features",
    "Item",
    "ScriptView",
    "TipItems",
    "agreement",
    "bounded_script",
    "bounded_tip",
    "extract_script",
    "extract_tip",
]
