#!/bin/sh
# The repository stands alone: what a clone holds is all its code and docs cite.
# Usage: standalone_check.sh SOURCE_DIR. Fails (exit 1), naming file and line, on
#  1. a citation of the workspace notes outside the repository (a path through a "shared" folder):
#     cite docs/reference/ instead, where every outside fact has its public source;
#  2. an issue number with no repository in front of it (the word issue, then a number): a bare
#     number points into a tracker a reader cannot see. Say what changed or is missing instead; an upstream issue is
#     fine as "owner/repo issue N" or as its URL;
#  3. a docs/reference/ path that does not exist;
#  4. a tracked generated file (Python bytecode, a build tree, CMake or ctest output).
# Checks the files git tracks (or, outside a git checkout, every file but build trees), except
# .ci/ and binary files.
set -eu
src=${1:?usage: standalone_check.sh SOURCE_DIR}
cd "$src"

list=$(mktemp)
hits=$(mktemp)
trap 'rm -f "$list" "$hits"' EXIT

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z -- . ':!:.ci' >"$list"
  in_git=1
else
  find . -path ./.git -prune -o -path ./.ci -prune -o -path './build*' -prune -o -path ./out -prune \
    -o -path ./.carry -prune -o -type f -print0 | sed -z 's|^\./||' >"$list"
  in_git=0
fi

failed=0
report() {  # title, then the offending lines on stdin
  if [ -s "$hits" ]; then
    echo "$1:"
    sed 's/^/  /' "$hits"
    failed=1
  fi
}

# 1. Workspace notes: any path through a folder named shared (written [/] so this file passes).
xargs -0 grep -HnIE 'shared[/]' -- <"$list" >"$hits" 2>/dev/null || true
report "cites files outside the repository (use docs/reference/)"

# 2. Issue numbers not preceded by owner/repo.
issue='[Ii]ssues?[[:space:]]+#?[0-9]+'
qualified="[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+[[:space:]]+$issue"
xargs -0 grep -HnIE "$issue" -- <"$list" 2>/dev/null |
  while IFS= read -r line; do
    text=${line#*:*:}
    stripped=$(printf '%s\n' "$text" | sed -E "s|$qualified||g")
    if printf '%s\n' "$stripped" | grep -qE "$issue"; then printf '%s\n' "$line"; fi
  done >"$hits" || true
report "cites an issue number without its repository (say what changed, or write owner/repo issue N)"

# 3. docs/reference/ paths that are cited must exist.
xargs -0 grep -ohIE 'docs/reference/[A-Za-z0-9_./-]*[A-Za-z0-9_/-]' -- <"$list" 2>/dev/null | sort -u |
  while IFS= read -r path; do
    [ -e "$path" ] || printf '%s\n' "$path"
  done >"$hits" || true
report "cites docs/reference/ files that do not exist"

# 4. Generated files.
if [ "$in_git" = 1 ]; then
  tr '\0' '\n' <"$list" |
    grep -E '(^|/)__pycache__/|\.py[co]$|(^|/)(build[^/]*|CMakeFiles|Testing)/|(^|/)CMakeCache\.txt$|(^|/)CTestTestfile\.cmake$|\.(o|obj|a|so)$' \
      >"$hits" || true
  report "tracks generated files (remove them and list them in .gitignore)"
fi

if [ "$failed" = 0 ]; then
  echo "standalone: $(tr -cd '\0' <"$list" | wc -c) files checked, none cites outside the repository"
fi
exit "$failed"
