"""Never answers, never reads, never exits on its own."""

import time

time.sleep(3600)
