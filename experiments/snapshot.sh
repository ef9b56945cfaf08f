#!/bin/bash
# Installs a commit into $EXP/<name> (a detached worktree and a venv with a
# plain, non-editable install), so that runs keep their code while the work
# tree changes: snapshot.sh <commit> [name]   (default name: snap)
set -euo pipefail
. "$(dirname "$0")/env.sh"
commit=$1
name=${2:-snap}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
mkdir -p "$EXP"
git -C "$repo" worktree add --detach "$EXP/$name" "$commit"
python3 -m venv "$EXP/$name/venv"
"$EXP/$name/venv/bin/pip" install -q "$EXP/$name"
echo "snapshot $name at $(git -C "$EXP/$name" rev-parse --short HEAD)"
