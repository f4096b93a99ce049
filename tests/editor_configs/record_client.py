"""Stands in for a terminal ACP client (toad, acpx): records its arguments and environment.

A shell snippet runs with this script first on PATH under the client's name; it writes
{"argv": [...], "env": {...}} to the file named by $RECORD_CLIENT_TO and exits.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

if __name__ == "__main__":
    record = {"argv": sys.argv[1:], "env": dict(os.environ)}
    Path(os.environ["RECORD_CLIENT_TO"]).write_text(json.dumps(record))
