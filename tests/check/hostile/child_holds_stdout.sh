#!/bin/sh
# A wrapper (as npx or a launcher script is) whose child outlives the agent and holds
# its stdout open; the child's pid goes to $HOSTILE_PIDS so a test can look for it.
sleep 600 &
echo $! >> "${HOSTILE_PIDS:-/dev/null}"
exec "${PYTHON:-python3}" -S "$(dirname "$0")/minimal.py"
