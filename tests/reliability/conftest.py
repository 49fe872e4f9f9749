import sys
from pathlib import Path

# The reliability tests share a few test-only helpers (reliability_support.py, tiny_protocol.py).
sys.path.insert(0, str(Path(__file__).parent))
