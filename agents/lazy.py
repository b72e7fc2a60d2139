"""The libraries that take seconds to load, loaded on first use, one at a time.

rouge-score and crowd-kit bring nltk, scipy, sklearn and pandas (seconds of a process's start on two cores), openai
another second; the apps, servers and workers load none of them until a score, an aggregation, a batch or a model
run needs one. Every such import goes through ``load``, under one lock: nltk's modules import one another in a
circle, and two threads entering it by different routes at once (rouge-score's stemmer, crowd-kit's corpus reader)
leave a half-loaded ``nltk`` in ``sys.modules`` that fails every later use in the process.
"""

import importlib
import threading
from types import ModuleType

_LOCK = threading.RLock()


def load(name: str) -> ModuleType:
    """The module ``name``, imported by the first caller while any other waits."""
    with _LOCK:
        return importlib.import_module(name)
