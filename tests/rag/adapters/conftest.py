"""The adapters' tests share tests/rag's helpers (_collection_data)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
