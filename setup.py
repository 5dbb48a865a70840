"""Build script for spmbpe's C extensions ``spmbpe._core``,
``spmbpe._normalizer`` and ``spmbpe._testing``.

All project metadata lives in pyproject.toml; this file only defines the
extensions and how their C source is obtained.

Each extension links only the C of csrc/ it calls (CSRC_OF below):
``spmbpe._core`` (spmbpe/_core.pyx, which includes spmbpe/core/*.pyx) the
vocabulary and merge-rule tables, ``spmbpe._normalizer`` the normalizer,
``spmbpe._testing`` (test hooks into a core) none.  Each
``spmbpe/<name>.c`` is generated from ``spmbpe/<name>.pyx`` by Cython, is
not kept in git, and is shipped in the sdist.  The rule (for the generated
C files together):

* they exist, are up to date, and ``SPMBPE_CYTHONIZE`` is not ``1``: compile
  them and do not import Cython at all (Cython is even hidden from this
  process, so that setuptools does not import it either).
* one is older than ``spmbpe/*.pyx``, ``spmbpe/*.pxd``, ``spmbpe/core/*`` or
  ``csrc/*.h``:
  re-generate them if Cython can be imported; otherwise warn and compile the
  existing C files.
* one is missing, or ``SPMBPE_CYTHONIZE=1``: generate them with Cython
  (language_level=3); fail with a clear message if Cython is missing.

``python -m build --sdist`` (or ``setup.py sdist``) applies the same rule
before packing, so the sdist always contains up-to-date generated C files.
"""

import os
import sys
from importlib.util import find_spec

# setuptools runs this file from the project directory; be robust anyway.
HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.abspath(os.getcwd()) != HERE:
    os.chdir(HERE)

# The Cython modules and the rule for when Cython runs live beside the build
# backend, which asks for Cython by the same rule (build_backend/backend.py).
sys.path.insert(0, os.path.join(HERE, "build_backend"))
from backend import MODULES, cython_inputs, cython_reason  # noqa: E402

PKG = "spmbpe"
# The csrc/*.c files each extension links (the rest of csrc/ is headers).
CSRC_OF = {
    "spmbpe._core": ["spm_pairs.c", "spm_vocab.c"],
    "spmbpe._normalizer": ["spm_normalizer.c"],
    "spmbpe._testing": [],
}
PYXS = [stem + ".pyx" for _, stem in MODULES]
C_FILES = [stem + ".c" for _, stem in MODULES]
CSRC = "csrc"


def _log(msg):
    print("spmbpe: " + msg, flush=True)


def _cython_inputs():
    """Files whose change means the generated C files must be re-generated."""
    return [os.path.relpath(p, HERE) for p in cython_inputs(HERE)]


def _decide():
    """Return (use_cython, reason)."""
    reason, required = cython_reason(HERE)
    if reason is None or required:
        return reason is not None, reason
    # A stale C file: regenerate it when Cython is there (find_spec on a
    # top-level name does not import the package).
    if find_spec("Cython") is not None:
        return True, reason
    _log(
        "WARNING: %s but Cython is not installed; "
        "compiling the existing C files, which may be out of date" % reason
    )
    return False, None


USE_CYTHON, REASON = _decide()


class _HideCython:
    """Meta-path finder that makes ``import Cython`` fail in this process.

    setuptools.command.build_ext imports Cython.Distutils whenever it can;
    when we build from the shipped C file we want no Cython at all.
    """

    def find_spec(self, name, path=None, target=None):
        if name == "Cython" or name.startswith("Cython."):
            raise ModuleNotFoundError(
                "Cython is not used when building spmbpe from %s" % ", ".join(C_FILES),
                name=name,
            )
        return None


if not USE_CYTHON:
    sys.meta_path.insert(0, _HideCython())

# Imported only after the decision above (see _HideCython).
from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext as _build_ext  # noqa: E402
from setuptools.command.sdist import sdist as _sdist  # noqa: E402

_generated = False


def _generate_c():
    """Run Cython on the .pyx files (at most once per process)."""
    global _generated
    if _generated:
        return
    try:
        from Cython.Build import cythonize
    except ImportError as exc:
        raise SystemExit(
            "error: building spmbpe needs Cython>=3.0 to generate %s from %s "
            "(%s), but Cython cannot be imported: %s\n"
            "Install Cython (python -m pip install 'Cython>=3.0'), or build "
            "from an sdist, which ships the generated C files."
            % (", ".join(C_FILES), ", ".join(PYXS), REASON, exc)
        )
    _log("cythonizing %s (%s)" % (", ".join(PYXS), REASON))
    cythonize(
        [Extension(name, [stem + ".pyx"], include_dirs=[CSRC]) for name, stem in MODULES],
        compiler_directives={"language_level": 3},
        force=True,
    )
    for c_file in C_FILES:
        if not os.path.exists(c_file):
            raise SystemExit("error: Cython did not produce %s" % c_file)
    _generated = True


class build_ext(_build_ext):
    def run(self):
        if USE_CYTHON:
            _generate_c()
        else:
            _log("compiling the pre-generated %s (Cython not used)" % ", ".join(C_FILES))
        super().run()

    def build_extensions(self):
        # gcc / clang (unix, mingw32, cygwin) get -O3; MSVC keeps its defaults.
        if self.compiler.compiler_type != "msvc":
            for ext in self.extensions:
                ext.extra_compile_args = ["-O3"] + list(ext.extra_compile_args or [])
        super().build_extensions()


class sdist(_sdist):
    def run(self):
        # Before egg_info builds the file list, so MANIFEST.in picks it up.
        if USE_CYTHON:
            _generate_c()
        super().run()

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        # The generated C files are added here rather than in MANIFEST.in:
        # in a fresh clone they do not exist yet when the build frontend
        # first reads the manifest (get_requires_for_build_sdist), which
        # would print a "no files found" warning for each.
        for c_file in C_FILES:
            dest = os.path.join(base_dir, c_file)
            if not os.path.exists(dest) and os.path.exists(c_file):
                self.copy_file(c_file, dest)
            if not os.path.exists(dest):
                raise SystemExit("error: %s is missing from the sdist" % c_file)


setup(
    ext_modules=[
        Extension(
            name,
            sources=[stem + ".c"] + [os.path.join(CSRC, c) for c in CSRC_OF[name]],
            include_dirs=[CSRC],
            depends=_cython_inputs(),
        )
        for name, stem in MODULES
    ],
    cmdclass={"build_ext": build_ext, "sdist": sdist},
)
