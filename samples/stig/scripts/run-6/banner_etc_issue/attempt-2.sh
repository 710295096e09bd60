#!/usr/bin/env bash
# Rule: banner_etc_issue  (attempt 2)
# The short "I've read & consent" form is only for devices that cannot show
# the full notice; the check wants the full DoD text, word for word.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
ISSUE=/etc/issue
TMP="$(mktemp)"
trap 'rm -f "$TMP"' EXIT

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# collapse all whitespace so wrapping differences don't matter in the check
normalize() { tr -s '[:space:]' ' ' < "$1" | sed -E 's/^ //; s/ $//'; }

# quoted heredoc: no expansion, the text is copied exactly
cat > "$TMP" <<'EOF'
You are accessing a U.S. Government (USG) Information System (IS) that is provided for USG-authorized use only.

By using this IS (which includes any device attached to this IS), you consent to the following conditions:

-The USG routinely intercepts and monitors communications on this IS for purposes including, but not limited to, penetration testing, COMSEC monitoring, network operations and defense, personnel misconduct (PM), law enforcement (LE), and counterintelligence (CI) investigations.

-At any time, the USG may inspect and seize data stored on this IS.

-Communications using, or data stored on, this IS are not private, are subject to routine monitoring, interception, and search, and may be disclosed or used for any USG-authorized purpose.

-This IS includes security measures (e.g., authentication and access controls) to protect USG interests--not for your personal benefit or privacy.

-Notwithstanding the above, using this IS does not constitute consent to PM, LE or CI investigative searching or monitoring of the content of privileged communications, or work product, related to personal representation or services by attorneys, psychotherapists, or clergy, and their assistants. Such communications and work product are private and confidential. See User Agreement for details.
EOF

# sanity checks on the text itself
grep -q '^You are accessing a U.S. Government (USG) Information System (IS)' "$TMP" \
  || die "banner text does not start with the DoD notice"
grep -q 'See User Agreement for details\.$' "$TMP" || die "banner text truncated"
words="$(wc -w < "$TMP")"
(( words > 200 )) || die "banner has only ${words} words"

if [[ -f "$ISSUE" ]]; then
  cp -a -- "$ISSUE" "${ISSUE}.bak.${TS}"
  if [[ "$(normalize "$ISSUE")" == "$(normalize "$TMP")" ]]; then
    log "/etc/issue already carries the DoD notice"
  fi
fi

install -m 0644 -o root -g root "$TMP" "$ISSUE"
restorecon "$ISSUE" 2>/dev/null || true

# verify what landed on disk
[[ "$(normalize "$ISSUE")" == "$(normalize "$TMP")" ]] || die "/etc/issue differs after install"
log "/etc/issue: $(wc -l < "$ISSUE") lines, ${words} words"
