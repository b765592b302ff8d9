#!/usr/bin/env bash
# check_transpile.sh RK CODEGEN_DIR CLI_DIR SCENARIO - checks of
# `rk transpile` that compare files byte for byte, which expect.sh cannot:
#
#   golden        corpus kernels (CODEGEN_DIR/kernels) transpiled for c, cuda,
#                 opencl and msl (and wgsl where its goldens exist), to
#                 stdout and with -o, are exactly the goldens of the
#                 library's own test (CODEGEN_DIR/golden)
#   error_golden  a kernel a target refuses: exit 1, nothing on stdout, and
#                 stderr is exactly the golden .err diagnostic
#   stdin         '-' reads stdin; only the name in the header changes
#   output_kept   -o OUT with an invalid source or unknown entry leaves an
#                 existing OUT (contents and permissions) untouched and no
#                 temporary file behind; a good run replaces it, keeping
#                 its permissions
#   output_no_dir -o into a directory that does not exist fails with exit 1
#                 and a message, creating nothing
#   output_same_file  -o naming the input (by the same name, another
#                 spelling, a hard link, a symbolic link, or stdin's file)
#                 is refused with exit 1 and the input left intact
#   output_links  -o through a symbolic link writes the link's target and
#                 keeps the link; a dangling link, or a directory, is
#                 refused with a message, leaving it as it was; a FIFO is
#                 written in place
#
# Exits 0 when every check holds; otherwise prints what differed, exits 1.
set -u
if [ $# -ne 4 ]; then
  echo "usage: check_transpile.sh RK CODEGEN_DIR CLI_DIR SCENARIO" >&2
  exit 1
fi
# Absolute paths: some scenarios change directory.
case $1 in
  */*) rk=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") ;;
  *) rk=$1 ;;
esac
codegen=$(cd "$2" && pwd) || exit 1
cli=$(cd "$3" && pwd) || exit 1
scenario=$4

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
# mode_of FILE: its permission bits in octal ("640"), with GNU stat or
# (macOS) BSD stat.
mode_of() { stat -c %a "$1" 2>/dev/null || stat -f %Lp "$1"; }

fail() {
  echo "FAILED: $*"
  failed=1
}

ext() {
  case $1 in
    c) echo c ;;
    cuda) echo cu ;;
    opencl) echo cl ;;
    wgsl) echo wgsl ;;
    msl) echo metal ;;
  esac
}

# same FILE GOLDEN WHAT: FILE must equal GOLDEN byte for byte.
same() {
  if ! cmp -s "$1" "$2"; then
    fail "$3 differs from $2"
    diff -u "$2" "$1" | head -n 20
  fi
}

# The directory holds exactly the files named (no temporary left behind).
only_files() {
  local dir=$1
  shift
  local got want
  got=$(cd "$dir" && ls -A | sort | tr '\n' ' ')
  want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "$dir holds '$got', expected '$want'"
}

case $scenario in
  golden)
    # Run in the kernels directory: the name given is the one in the header.
    cd "$codegen/kernels" || exit 1
    for k in saxpy heat2d actor_counter matmul_tiled; do
      for t in c cuda opencl wgsl msl; do
        golden=$codegen/golden/$k.$(ext "$t")
        # The WGSL printer is newer than the others: compared once its
        # goldens are there.
        if [ "$t" = wgsl ] && [ ! -e "$golden" ]; then
          echo "note: no $golden; wgsl not compared"
          continue
        fi
        "$rk" transpile "$k.c" --target "$t" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq 0 ] || fail "$k.c --target $t: exit $rc: $(cat "$tmp/err")"
        [ -s "$tmp/err" ] && fail "$k.c --target $t wrote to stderr"
        same "$tmp/out" "$golden" "stdout of $k.c --target $t"
      done
    done
    "$rk" transpile saxpy.c --target=cuda -o "$tmp/saxpy.cu" >"$tmp/out" ||
      fail "-o saxpy.cu: exit $?"
    [ -s "$tmp/out" ] && fail "-o still wrote to stdout"
    same "$tmp/saxpy.cu" "$codegen/golden/saxpy.cu" "-o saxpy.cu"
    only_files "$tmp" err out saxpy.cu
    ;;

  error_golden)
    cd "$codegen/kernels" || exit 1
    "$rk" transpile wide_types.c --target msl >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] || fail "wide_types.c --target msl: exit $rc, expected 1"
    [ -s "$tmp/out" ] && fail "a refused source wrote to stdout"
    same "$tmp/err" "$codegen/golden/wide_types.metal.err" \
      "stderr of wide_types.c --target msl"
    ;;

  stdin)
    "$rk" transpile - --target opencl <"$codegen/kernels/saxpy.c" \
      >"$tmp/out" || fail "stdin: exit $?"
    sed 's/^ \*   saxpy\.c$/ *   <stdin>/' "$codegen/golden/saxpy.cl" \
      >"$tmp/want"
    same "$tmp/out" "$tmp/want" "stdout of '- --target opencl'"
    ;;

  output_kept)
    mkdir "$tmp/d"
    out=$tmp/d/out.cu
    printf 'precious\n' >"$out"
    chmod 640 "$out"
    cp -p "$out" "$tmp/before"
    "$rk" transpile "$cli/bad_kernel.c" --target cuda -o "$out" \
      >"$tmp/stdout" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] || fail "invalid source: exit $rc, expected 1"
    grep -Eq 'bad_kernel\.c:4:11: error: ' "$tmp/err" ||
      fail "no diagnostic on stderr: $(cat "$tmp/err")"
    "$rk" transpile "$codegen/kernels/saxpy.c" --target cuda --entry nope \
      -o "$out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] || fail "unknown entry: exit $rc, expected 1"
    grep -q "no entry point 'nope'" "$tmp/err" ||
      fail "unknown entry not reported: $(cat "$tmp/err")"
    same "$out" "$tmp/before" "OUT after failed runs"
    [ "$(mode_of "$out")" = 640 ] || fail "OUT mode changed"
    only_files "$tmp/d" out.cu
    # A good run replaces OUT and keeps its permissions.
    (cd "$codegen/kernels" &&
      "$rk" transpile saxpy.c --target cuda -o "$out") || fail "good run"
    same "$out" "$codegen/golden/saxpy.cu" "OUT after a good run"
    [ "$(mode_of "$out")" = 640 ] || fail "a good run changed OUT's mode"
    only_files "$tmp/d" out.cu
    ;;

  output_no_dir)
    "$rk" transpile "$codegen/kernels/saxpy.c" --target cuda \
      -o "$tmp/missing/out.cu" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] || fail "exit $rc, expected 1"
    grep -q "cannot write '$tmp/missing/out.cu': No such file or directory" \
      "$tmp/err" || fail "no clear message: $(cat "$tmp/err")"
    [ -s "$tmp/out" ] && fail "wrote to stdout"
    [ -e "$tmp/missing" ] && fail "created $tmp/missing"
    ;;

  output_same_file)
    cd "$tmp" || exit 1
    cp "$codegen/kernels/saxpy.c" k.c
    ln k.c hard.c
    ln -s k.c soft.c
    # refused OUT [rk transpile arguments before -o...]
    refused() {
      local out=$1
      shift
      "$rk" transpile "$@" --target cuda -o "$out" >"$tmp/out" 2>"$tmp/err"
      rc=$?
      [ $rc -eq 1 ] || fail "$* -o $out: exit $rc, expected 1"
      grep -q "refusing to write '$out': it is the input file" "$tmp/err" ||
        fail "$* -o $out: no clear message: $(cat "$tmp/err")"
      same k.c "$codegen/kernels/saxpy.c" "k.c after $* -o $out"
    }
    refused k.c k.c
    refused ./k.c k.c
    refused k.c hard.c
    refused soft.c k.c
    refused "$tmp/k.c" soft.c
    refused k.c - <k.c
    [ -L soft.c ] || fail "soft.c is no longer a link"
    only_files "$tmp" err hard.c k.c out soft.c
    # Another file is fine.
    "$rk" transpile k.c --target cuda -o other.cu || fail "-o other.cu"
    ;;

  output_links)
    cd "$tmp" || exit 1
    mkdir real
    printf 'old\n' >real/out.cu
    chmod 640 real/out.cu
    ln -s real/out.cu link.cu
    "$rk" transpile "$codegen/kernels/saxpy.c" --target cuda -o link.cu ||
      fail "-o link.cu: exit $?"
    [ -L link.cu ] || fail "link.cu was replaced by a file"
    "$rk" transpile "$codegen/kernels/saxpy.c" --target cuda >"$tmp/want"
    same real/out.cu "$tmp/want" "the link's target"
    [ "$(mode_of real/out.cu)" = 640 ] || fail "the target's mode changed"
    only_files real out.cu
    # A dangling link: refused, and neither the link nor its target made.
    ln -s nowhere/out.cu dangling.cu
    "$rk" transpile "$codegen/kernels/saxpy.c" --target cuda -o dangling.cu \
      >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] || fail "dangling link: exit $rc, expected 1"
    grep -q "cannot write 'dangling.cu': it is a symbolic link to 'nowhere/out.cu', which does not exist" \
      "$tmp/err" || fail "dangling link: no clear message: $(cat "$tmp/err")"
    [ -L dangling.cu ] || fail "the dangling link was replaced"
    [ -e nowhere ] && fail "the dangling link's target was created"
    # A directory: refused.
    mkdir dir.cu
    "$rk" transpile "$codegen/kernels/saxpy.c" --target cuda -o dir.cu \
      2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] || fail "directory: exit $rc, expected 1"
    grep -q "cannot write 'dir.cu': it is a directory" "$tmp/err" ||
      fail "directory: no clear message: $(cat "$tmp/err")"
    [ -d dir.cu ] || fail "the directory was replaced"
    # A FIFO is written in place (a reader gets the text).
    mkfifo fifo.cu
    cat fifo.cu >"$tmp/from-fifo" &
    reader=$!
    "$rk" transpile "$codegen/kernels/saxpy.c" --target cuda -o fifo.cu ||
      fail "-o fifo.cu: exit $?"
    wait $reader
    [ -p fifo.cu ] || fail "the FIFO was replaced"
    same "$tmp/from-fifo" "$tmp/want" "text read from the FIFO"
    ;;

  *)
    echo "check_transpile.sh: unknown scenario '$scenario'" >&2
    exit 1
    ;;
esac
exit $failed
