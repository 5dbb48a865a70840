#!/usr/bin/env bash
# Build spmbpe._core, spmbpe._normalizer and spmbpe._testing with
# AddressSanitizer and UndefinedBehaviorSanitizer in a scratch copy of the
# checkout, and run tests under them.  Any sanitizer report stops the run
# with a non-zero status.
#
#   tools/sanitize.sh                 # the default test selection (below)
#   tools/sanitize.sh tests/test_api.py -k encode     # any pytest arguments
#   tools/sanitize.sh --leaks         # also a LeakSanitizer run of a small
#                                     # workload (tools/leak_workload.py)
#
# Environment: SPMBPE_SAN_DIR (scratch directory; default a new one under
# /tmp, removed afterwards unless SPMBPE_SAN_KEEP=1), SPMBPE_SAN_REUSE=1 (keep
# the modules already built there), SPMBPE_SAN_FULL=1 (the whole suite), CC
# (default gcc; the sanitizer runtime is the one of that compiler), PYTHON.
#
# The checkout itself is never built or modified.  Python's own allocations
# go through malloc (PYTHONMALLOC=malloc) so ASan sees every buffer.  Leak
# detection is off for the test run (the interpreter leaks by design at exit);
# --leaks runs a workload under LeakSanitizer with suppressions for CPython.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python}
CC=${CC:-gcc}
LEAKS=0
if [ "${1:-}" = "--leaks" ]; then
    LEAKS=1
    shift
fi

# The default selection: the public API, the file readers and loaders, the C
# normalizer and the trained normalized models, HF model folders, chunking and
# batches, the command line's output kernels and JSONL reader, and the hardening tests (fuzz regressions and a short fuzz run,
# malformed files, untrusted text, threads): about 8 minutes on 2 busy cores.
# SPMBPE_SAN_FULL=1 runs the whole suite instead (about 10 minutes), except
# the packaging tests and the three that feed corrupt maps to the
# sentencepiece library itself, which aborts under the ASan runtime (its
# code, not spmbpe's).
DEFAULT_TESTS=(
    tests/test_api.py
    tests/test_gguf_reader.py
    tests/test_spm_model_reader.py
    tests/test_loading.py
    tests/test_normalizer.py
    tests/test_normalized_models.py
    tests/test_hf_folder.py
    tests/test_tokenizer_json.py
    tests/test_ucs.py
    tests/test_chunking.py
    tests/test_chunk_cache.py
    tests/test_numpy_batch.py
    tests/test_malformed.py
    tests/test_untrusted.py
    tests/test_threads.py
    tests/test_batch_job.py
    tests/test_line_blocks.py
    tests/test_array_bytes.py
    tests/test_cli_documents.py
    tests/test_fuzz_regressions.py
)
EXCLUDE=(
    --ignore=tests/test_packaging.py
    --deselect=tests/test_normalizer.py::test_corrupt_charsmap_raises_value_error
    --deselect=tests/test_normalizer.py::test_corrupt_real_charsmap
    --deselect=tests/test_normalizer.py::test_fuzzed_charsmap_same_verdict_as_sentencepiece
)

WORK=${SPMBPE_SAN_DIR:-$(mktemp -d /tmp/spmbpe-san.XXXXXX)}
cleanup() {
    if [ -z "${SPMBPE_SAN_DIR:-}" ] && [ "${SPMBPE_SAN_KEEP:-0}" != 1 ]; then
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

build() {
    echo "== sanitizer build in $WORK"
    mkdir -p "$WORK"
    rm -rf "$WORK/spmbpe" "$WORK/csrc" "$WORK/tests" "$WORK/tools" "$WORK/docs" "$WORK/build_backend" "$WORK/pyproject.toml"
    cp -r "$ROOT/spmbpe" "$ROOT/csrc" "$ROOT/tests" "$ROOT/tools" "$ROOT/docs" "$ROOT/build_backend" "$ROOT/README.md" "$WORK/"
    find "$WORK" -name '*.so' -delete
    find "$WORK" -name __pycache__ -prune -exec rm -rf {} +

    SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    (
        cd "$WORK"
        CC="$CC" SAN_FLAGS="$SAN_FLAGS" "$PYTHON" - <<'EOF'
import glob, os, sys
from setuptools import Extension, setup

flags = os.environ["SAN_FLAGS"].split() + ["-O1", "-g"]
# The extensions and the csrc/*.c each links, as setup.py's MODULES and CSRC_OF.
csrc_of = {
    "spmbpe._core": ["spm_pairs.c", "spm_vocab.c"],
    "spmbpe._normalizer": ["spm_normalizer.c"],
    "spmbpe._testing": [],
}
stems = {name: name.replace(".", "/") for name in csrc_of}
try:
    from Cython.Build import cythonize
except ImportError:
    cythonize = None
if cythonize is not None:
    sources = {s: [s + ".pyx"] for s in stems.values()}
else:
    # No Cython: the generated C files of the checkout (pip install -e . writes them).
    missing = [s + ".c" for s in stems.values() if not os.path.exists(s + ".c")]
    if missing:
        sys.exit("sanitize.sh: Cython is not installed and %s are missing" % ", ".join(missing))
    sources = {s: [s + ".c"] for s in stems.values()}
exts = [
    Extension(name, sources[stems[name]] + ["csrc/" + c for c in csrc],
              include_dirs=["csrc"], extra_compile_args=flags, extra_link_args=flags)
    for name, csrc in csrc_of.items()
]
if cythonize is not None:
    exts = cythonize(exts, compiler_directives={"language_level": 3}, quiet=True)
setup(name="spmbpe-sanitized", ext_modules=exts,
      script_args=["build_ext", "--inplace", "--force", "-q"])
EOF
    ) > "$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log"; echo "sanitize.sh: build failed"; exit 2; }
}

if [ "${SPMBPE_SAN_REUSE:-0}" = 1 ] && ls "$WORK"/spmbpe/_core.*.so "$WORK"/spmbpe/_normalizer.*.so "$WORK"/spmbpe/_testing.*.so >/dev/null 2>&1; then
    # Iterating: keep the compiled modules (rebuild when a .pyx or csrc/
    # changed), take the Python files, tests and tools afresh.
    echo "== reusing the sanitizer build in $WORK"
    rm -rf "$WORK/tests" "$WORK/tools" "$WORK/docs"
    cp -r "$ROOT/tests" "$ROOT/tools" "$ROOT/docs" "$ROOT/README.md" "$WORK/"
    cp "$ROOT"/spmbpe/*.py "$WORK/spmbpe/"
else
    build
fi
# pytest's settings (the `long` marker) and CI's script, which
# tests/test_development.py reads; copied after the build (setup() would
# read pyproject.toml's [project] table).
rm -rf "$WORK/.ci"
cp -r "$ROOT/.ci" "$ROOT/pyproject.toml" "$WORK/"

LIBASAN=$("$CC" -print-file-name=libasan.so)
if [ ! -e "$LIBASAN" ]; then
    echo "sanitize.sh: $CC has no libasan.so ($LIBASAN)"
    exit 2
fi
# Only the Python processes get the sanitizer runtime (a preloaded libasan
# would also check, and fail, the shell's own tools).
SAN_ENV=(env LD_PRELOAD="$LIBASAN" PYTHONMALLOC=malloc PYTHONFAULTHANDLER=1
         UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
cd "$WORK"

# The sanitized modules must be the ones imported (not the checkout's).
"${SAN_ENV[@]}" ASAN_OPTIONS="detect_leaks=0" "$PYTHON" -c '
import spmbpe._core as c, spmbpe._normalizer as n, spmbpe._testing as t, sys
for m in (c, n, t):
    assert m.__file__.startswith(sys.argv[1]), m.__file__
print("   ", c.__file__, n.__file__, t.__file__, sep="\n    ")
' "$WORK"

status=0
echo "== tests under ASan+UBSan"
start=$(date +%s)
if [ $# -gt 0 ]; then
    tests=("$@")
elif [ "${SPMBPE_SAN_FULL:-0}" = 1 ]; then
    tests=(tests "${EXCLUDE[@]}")
else
    tests=()
    for t in "${DEFAULT_TESTS[@]}"; do
        if [ -e "$t" ]; then
            tests+=("$t")
        fi
    done
    tests+=("${EXCLUDE[@]}")
fi
# (--capture=sys: a sanitizer writes its report to file descriptor 2, which
# pytest's default capture would swallow as the process exits.  --long: the
# suite's long run, every hypothesis example and golden case, as the
# sanitizers need the most inputs they can get.)
"${SAN_ENV[@]}" ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1" \
    SPMBPE_SANITIZED=1 "$PYTHON" -m pytest -q -p no:cacheprovider -x --capture=sys --durations=10 --long "${tests[@]}" || status=$?
echo "== tests under sanitizers: status $status, $(( $(date +%s) - start )) s"

if [ $status -eq 0 ] && [ $LEAKS -eq 1 ]; then
    # CPython does not free everything at exit, so a raw LeakSanitizer
    # report is never empty.  A leak of spmbpe's is an allocation whose stack
    # passes through spmbpe's modules and that repeats once per iteration of
    # the workload; that is what fails the run.
    echo "== LeakSanitizer on tools/leak_workload.py"
    iterations=40
    rm -f "$WORK"/lsan.*
    "${SAN_ENV[@]}" ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:log_path=$WORK/lsan" LSAN_OPTIONS="exitcode=0" \
        "$PYTHON" tools/leak_workload.py --iterations $iterations || status=$?
    "$PYTHON" - "$WORK" $iterations <<'EOF' || status=$?
import glob, re, sys
work, iterations = sys.argv[1], int(sys.argv[2])
text = "".join(open(p, errors="replace").read() for p in glob.glob(work + "/lsan.*"))
ours, total = [], 0
for block in re.split(r"\n(?=(?:Direct|Indirect) leak of )", text):
    m = re.match(r"(Direct|Indirect) leak of (\d+) byte\(s\) in (\d+) object", block)
    if not m:
        continue
    total += 1
    frames = re.findall(r"#\d+ 0x[0-9a-f]+ in (\S+) (\S+)", block)
    mine = any("spmbpe" in where or "_core." in where or "_normalizer." in where or name.startswith("spm_")
               for name, where in frames)
    if mine and int(m.group(3)) >= iterations:
        ours.append(block.strip())
print(f"    {total} leak records (CPython's state at exit); {len(ours)} from spmbpe, repeating per iteration")
for block in ours[:10]:
    print(block[:3000])
sys.exit(1 if ours else 0)
EOF
    echo "== LeakSanitizer: status $status"
fi
exit $status
