import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts")
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)
