"""Progress reports that never branch the work loop.

The loop always calls ``update`` and ``close`` on what :func:`progress` gives;
with ``verbose=0`` that is a no-op object, otherwise a tqdm bar when the
``progress`` extra is installed, or plain printed lines.
"""

import sys
import time

__all__ = ["progress"]


class _NoProgress:
    def update(self, n=1, message=None):
        pass

    def close(self):
        pass


class _PrintProgress(_NoProgress):
    def __init__(self, total, desc, stream):
        self.total, self.desc, self.stream = total, desc, stream
        self.done, self.start = 0, time.perf_counter()

    def update(self, n=1, message=None):
        self.done += n
        line = f"[{self.desc}] {self.done}/{self.total} ({time.perf_counter() - self.start:.1f} s) {message or ''}"
        print(line.rstrip(), file=self.stream, flush=True)


class _TqdmProgress:
    def __init__(self, total, desc, stream):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=desc, file=stream, leave=False)

    def update(self, n=1, message=None):
        if message:
            self.bar.set_postfix_str(message, refresh=False)
        self.bar.update(n)

    def close(self):
        self.bar.close()


def progress(total, desc, verbose, stream=None):
    """A progress reporter: no-op for ``verbose <= 0``; tqdm or plain lines otherwise.

    ``verbose >= 2`` always prints plain lines (one per step, good for logs).
    """
    if not verbose or verbose <= 0:
        return _NoProgress()
    stream = sys.stderr if stream is None else stream
    if verbose == 1:
        try:
            return _TqdmProgress(total, desc, stream)
        except ImportError:
            pass
    return _PrintProgress(total, desc, stream)
