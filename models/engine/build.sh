#!/usr/bin/env bash
# Build llama.cpp's own server (models/llama_server.py) into VENV/bin/llama-server: the server's
# sources from llama-cpp-python's pinned sdist (sha256 checked; kept in the cache folder), linked
# against the libllama / libggml that llama-cpp-python installed in VENV (its ISA is theirs:
# the prebuilt wheel's, or this CPU's after `make native`). About a minute on 2 cores.
#   models/engine/build.sh VENV VERSION SHA256 URL
set -euo pipefail
venv=$(cd "$1" && pwd) version=$2 sha=$3 url=$4
here=$(cd "$(dirname "$0")" && pwd)
cache="${HOPGRAPH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hopgraph}/src"
sdist="$cache/llama_cpp_python-$version.tar.gz"
mkdir -p "$cache"
if [ ! -f "$sdist" ] || ! echo "$sha  $sdist" | sha256sum -c --status; then
    echo "    fetching llama-cpp-python $version's source (76 MB, for llama.cpp's server)"
    curl -fsSL --retry 3 -o "$sdist.part" "$url"
    echo "$sha  $sdist.part" | sha256sum -c --status \
        || { echo "error: $url does not match its pinned sha256 $sha" >&2; rm -f "$sdist.part"; exit 1; }
    mv "$sdist.part" "$sdist"
fi
src="$venv/src/llama.cpp-$version"
if [ ! -f "$src/tools/server/server.cpp" ]; then
    rm -rf "$src" && mkdir -p "$src"
    top="llama_cpp_python-$version/vendor/llama.cpp"
    tar -xzf "$sdist" -C "$src" --strip-components=3 \
        "$top/tools/server" "$top/tools/ui" "$top/tools/mtmd" "$top/scripts" "$top/common" \
        "$top/include" "$top/ggml/include" "$top/vendor"
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
build="$venv/src/llama-server-build"
cmake -S "$here" -B "$build" -DLLAMA_SRC="$src" -DLLAMA_LIB="$site" >/dev/null
echo "    compiling (a line each tenth, with the seconds this script has taken; log: $build.log)"
compile() {  # cmake's own "[ 42%]" steps, one line a tenth: a compile that shows it is alive
    local next=0 line
    while IFS= read -r line; do
        if [[ $line =~ ^\[\ *([0-9]+)%\] ]] && ((BASH_REMATCH[1] >= next)); then
            echo "    ${BASH_REMATCH[1]}% (${SECONDS} s)"
            next=$((BASH_REMATCH[1] + 10))
        fi
    done
}
cmake --build "$build" -j "$(nproc)" 2>&1 | tee "$build.log" | compile \
    || { tail -30 "$build.log" >&2; echo "error: llama-server did not build (log: $build.log)" >&2; exit 1; }
# beside, then renamed over: a server in use keeps its old file (cp over it failed with "Text
# file busy" while any run used the engine), and no half-copied binary is ever in place
cp "$build/llama-server" "$venv/bin/llama-server.new"
mv -f "$venv/bin/llama-server.new" "$venv/bin/llama-server"
"$venv/bin/llama-server" --version 2>&1 | head -1 | sed 's/^/    llama-server /'
