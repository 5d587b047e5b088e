"""Where the checkout's own directories are: one place, so moving a module never changes them."""
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = REPO_ROOT / "cases"          # the operators' own case files
SWCANN_DIR = REPO_ROOT / "swcann"        # the software CANN's sources
