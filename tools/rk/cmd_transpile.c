/* cmd_transpile.c - `rk transpile FILE --target T [-o OUT] [--entry NAME]
 * [--persistent]` and `rk transpile FILE --list`: the kernel-language
 * transpiler (rk/codegen.h) on the command line.
 *
 *   rk transpile saxpy.c --target cuda -o saxpy.cu
 *   rk transpile - --target msl < saxpy.c        # "-" reads stdin
 *   rk transpile heat2d.c --list                 # entry points, no code
 *   rk transpile heat2d.c --list --json          # the same as JSON
 *
 * The source is read whole, handed to rk_transpile() (or
 * rk_codegen_list_entries() for --list) under the name given on the command
 * line, and the result is written to OUT or stdout. OUT is written through a
 * temporary file in its directory and renamed over it, so a failed run never
 * leaves OUT half-written or replaces it with nothing (rk__write_file_replace:
 * a symbolic link is followed, a dangling one refused; a FIFO or device such
 * as /dev/stdout is written in place). OUT may not be FILE itself (the same
 * device and inode, whatever the names).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sys.h"
#include "rk/rk.h"
#include "tool.h"

/* Sources beyond this are refused before reading on; the transpiler itself
 * stops at 1 MiB (rk/codegen.h) and says so in its own words. */
enum { kMaxInputBytes = 16 << 20 };

typedef struct options {
  const char *file;  /* FILE, or "-" for stdin */
  const char *out;   /* -o; NULL or "-" for stdout */
  const char *entry; /* --entry; NULL for all */
  const char *target_name;
  rk_target_t target;
  bool list;
  bool json;       /* --json: --list as one JSON object */
  bool persistent; /* --persistent: CUDA persistent actor kernels */
  bool loop_guard; /* --loop-guard: WGSL loop guard */
} options_t;

/* ---- Input -------------------------------------------------------------- */

/* Reads FILE (or stdin for "-") into a NUL-terminated malloc'd string.
 * Prints the reason and returns NULL on failure. */
static char *read_source(const char *file) {
  bool is_stdin = strcmp(file, "-") == 0;
  FILE *f = is_stdin ? stdin : fopen(file, "rb");
  const char *shown = is_stdin ? "standard input" : file;
  if (!f) {
    fprintf(stderr, "rk transpile: cannot open '%s': %s\n", file,
            strerror(errno));
    return NULL;
  }
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  bool too_big = false;
  while (buf) {
    if (len > kMaxInputBytes) {
      too_big = true;
      break;
    }
    if (cap - len < 2) {
      char *bigger = realloc(buf, cap * 2);
      if (!bigger) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = bigger;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - 1 - len, f);
    len += n;
    if (n == 0) break; /* end of file or an error, told apart below */
  }
  int read_errno = ferror(f) ? errno : 0;
  if (!is_stdin) fclose(f);
  if (!buf) {
    fprintf(stderr, "rk transpile: out of memory reading '%s'\n", shown);
    return NULL;
  }
  const char *why = NULL;
  if (too_big)
    why = "it is larger than 16 MiB (kernel sources may have 1 MiB)";
  else if (read_errno)
    why = strerror(read_errno); /* "Is a directory" */
  else if (memchr(buf, '\0', len))
    why = "it contains a NUL byte; kernel sources are text";
  if (why) {
    fprintf(stderr, "rk transpile: cannot read '%s': %s\n", shown, why);
    free(buf);
    return NULL;
  }
  buf[len] = '\0';
  return buf;
}

/* ---- --list ------------------------------------------------------------- */

/* Column width of the widest string of one parameter field. */
static int widest(const rk_entry_t *e, bool type) {
  size_t w = 0;
  for (size_t i = 0; i < e->param_count; ++i) {
    size_t n = strlen(type ? e->params[i].type : e->params[i].name);
    if (n > w) w = n;
  }
  return (int)w;
}

static void print_entry(FILE *out, const rk_entry_t *e) {
  fprintf(out, "%s %s\n", rk_entry_kind_name(e->kind), e->name);
  if (e->kind == RK_ENTRY_STENCIL) {
    if (e->dims == 3)
      fprintf(out, "  tile      %u x %u x %u threads, halo %u\n", e->tile[0],
              e->tile[1], e->tile[2], e->halo);
    else
      fprintf(out, "  tile      %u x %u threads, halo %u\n", e->tile[0],
              e->tile[1], e->halo);
  }
  if (e->batch_of)
    fprintf(out,
            "  batch     runs handler %s on rk_count messages in order "
            "(one launch)\n",
            e->batch_of);
  fprintf(out, "  shared    %zu bytes of block-shared memory%s\n",
          e->shared_bytes,
          e->dynamic_shared ? ", plus the launch's dynamic shared memory" : "");
  fprintf(out, "  barrier   %s\n",
          e->uses_barrier ? "yes (reaches rk_sync_threads)" : "no");
  fprintf(out, "  loops     %s\n", e->loops ? "yes" : "no");
  if (e->param_count == 0) {
    fprintf(out, "  params    none\n");
    return;
  }
  int wn = widest(e, false), wt = widest(e, true);
  for (size_t i = 0; i < e->param_count; ++i) {
    const rk_entry_param_t *p = &e->params[i];
    fprintf(out, "  %-9s %-*s  %-*s  %-6s %3zu bytes", i == 0 ? "params" : "",
            wn, p->name, wt, p->type, rk_arg_kind_name(p->kind), p->size);
    if (p->kind == RK_ARG_PTR)
      fprintf(out, ", %zu-byte elements%s", p->elem_size,
              p->read_only ? ", read-only" : "");
    fputc('\n', out);
  }
}

/* One entry point as a JSON object (the fields of rk_entry_t). */
static void print_entry_json(FILE *out, const rk_entry_t *e) {
  fprintf(out, "{\"name\":");
  tool_json_string(out, e->name);
  fprintf(out, ",\"kind\":\"%s\",\"params\":[", rk_entry_kind_name(e->kind));
  for (size_t i = 0; i < e->param_count; ++i) {
    const rk_entry_param_t *p = &e->params[i];
    fprintf(out, "%s{\"name\":", i ? "," : "");
    tool_json_string(out, p->name);
    fprintf(out, ",\"type\":");
    tool_json_string(out, p->type);
    fprintf(out,
            ",\"kind\":\"%s\",\"size\":%zu,\"elem_size\":%zu,"
            "\"read_only\":%s}",
            rk_arg_kind_name(p->kind), p->size, p->elem_size,
            p->read_only ? "true" : "false");
  }
  fprintf(out, "],\"stencil\":");
  if (e->kind == RK_ENTRY_STENCIL)
    fprintf(out, "{\"dims\":%u,\"tile\":[%u,%u,%u],\"halo\":%u}", e->dims,
            e->tile[0], e->tile[1], e->tile[2], e->halo);
  else
    fprintf(out, "null");
  fprintf(out, ",\"batch_of\":");
  tool_json_string(out, e->batch_of);
  fprintf(out,
          ",\"shared_bytes\":%zu,\"dynamic_shared\":%s,\"uses_barrier\":%s,"
          "\"loops\":%s,\"handler_status\":%s}",
          e->shared_bytes, e->dynamic_shared ? "true" : "false",
          e->uses_barrier ? "true" : "false", e->loops ? "true" : "false",
          e->handler_status ? "true" : "false");
}

/* Reports a failed transpilation. Compile errors are printed as the
 * transpiler wrote them ("file:line:col: error: ..." with the line and a
 * caret), the form editors and build tools recognise. */
static void report(rk_status_t s) {
  if (s == RK_ERR_COMPILE)
    fprintf(stderr, "%s\n", rk_last_error());
  else
    fprintf(stderr, "rk transpile: %s\n", rk_last_error());
}

/* The text of --list: one block per entry point, in source order. Reports
 * its own errors. */
static bool list_entries(const char *source, const rk_transpile_options_t *o,
                         bool json, char **out_text, size_t *out_len) {
  rk_entry_list_t *list = NULL;
  rk_status_t s = rk_codegen_list_entries(source, o, &list, NULL);
  if (s != RK_OK) {
    report(s);
    return false;
  }
  FILE *mem = open_memstream(out_text, out_len);
  if (mem && json) {
    fprintf(mem, "{\"file\":");
    tool_json_string(mem, o->source_name);
    fprintf(mem, ",\"entries\":[");
    for (size_t i = 0; i < list->count; ++i) {
      if (i) fputc(',', mem);
      print_entry_json(mem, &list->entries[i]);
    }
    fprintf(mem, "]}\n");
  } else if (mem) {
    fprintf(mem, "%s: %zu entry point%s\n", o->source_name, list->count,
            list->count == 1 ? "" : "s");
    for (size_t i = 0; i < list->count; ++i) {
      fputc('\n', mem);
      print_entry(mem, &list->entries[i]);
    }
  }
  rk_entry_list_destroy(list);
  if (!mem || fclose(mem) != 0 || !*out_text) {
    if (mem) free(*out_text);
    *out_text = NULL;
    fprintf(stderr, "rk transpile: out of memory\n");
    return false;
  }
  return true;
}

/* ---- Command ------------------------------------------------------------ */

/* Parses the command line into *o. Returns TOOL_EXIT_OK or the usage error's
 * exit code; *out_help is set when help was printed. */
static int parse(int argc, char **argv, options_t *o, bool *out_help) {
  memset(o, 0, sizeof *o);
  *out_help = false;
  bool only_files = false; /* after "--" */
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *value;
    if (!only_files && a[0] == '-' && a[1] != '\0') {
      if (tool_is_help(a)) {
        *out_help = true;
        return TOOL_EXIT_OK;
      }
      if (strcmp(a, "--") == 0) {
        only_files = true;
      } else if (strcmp(a, "--list") == 0) {
        o->list = true;
      } else if (strcmp(a, "--json") == 0) {
        o->json = true;
      } else if (strcmp(a, "--persistent") == 0) {
        o->persistent = true;
      } else if (strcmp(a, "--loop-guard") == 0) {
        o->loop_guard = true;
      } else if (tool_match_option(argc, argv, &i, "--target", &value) ||
                 tool_match_option(argc, argv, &i, "-t", &value)) {
        if (!value || !*value)
          return tool_usage_error("transpile",
                                  "--target needs one of c, cuda, opencl, "
                                  "wgsl, msl");
        o->target_name = value;
      } else if (tool_match_option(argc, argv, &i, "--output", &value) ||
                 tool_match_option(argc, argv, &i, "-o", &value)) {
        if (!value || !*value)
          return tool_usage_error("transpile", "%s needs a file name", a);
        o->out = value;
      } else if (tool_match_option(argc, argv, &i, "--entry", &value)) {
        if (!value || !*value)
          return tool_usage_error("transpile",
                                  "--entry needs an entry point's name");
        o->entry = value;
      } else {
        return tool_usage_error("transpile", "unknown option '%s'", a);
      }
    } else if (!o->file) {
      o->file = a;
    } else {
      return tool_usage_error("transpile",
                              "unexpected argument '%s' (one FILE only)", a);
    }
  }
  if (!o->file)
    return tool_usage_error("transpile",
                            "no FILE to transpile (use '-' for stdin)");
  if (!o->target_name && !o->list)
    return tool_usage_error("transpile",
                            "--target is required: c, cuda, opencl, wgsl or "
                            "msl (or --list for the entry points)");
  if (o->target_name &&
      rk_target_from_name(o->target_name, &o->target) != RK_OK)
    return tool_usage_error("transpile", "--target: %s", rk_last_error());
  if (o->json && !o->list)
    return tool_usage_error("transpile",
                            "--json is for --list (code is printed as it is)");
  if (o->persistent && (!o->target_name || o->target != RK_TARGET_CUDA))
    return tool_usage_error(
        "transpile", "--persistent is for --target cuda only%s%s",
        o->target_name ? ", not " : "", o->target_name ? o->target_name : "");
  if (o->loop_guard && (!o->target_name || o->target != RK_TARGET_WGSL))
    return tool_usage_error(
        "transpile", "--loop-guard is for --target wgsl only%s%s",
        o->target_name ? ", not " : "", o->target_name ? o->target_name : "");
  return TOOL_EXIT_OK;
}

/* Whether OUT names the file FILE reads (stdin for "-"): the same device
 * and inode, so "k.c", "./k.c", a hard link or a symbolic link all count.
 * Prints the refusal. */
static bool output_is_input(const options_t *o) {
  if (!o->out || strcmp(o->out, "-") == 0) return false;
  struct stat in, out;
  if (stat(o->out, &out) != 0 || !S_ISREG(out.st_mode)) return false;
  bool is_stdin = strcmp(o->file, "-") == 0;
  if ((is_stdin ? fstat(STDIN_FILENO, &in) : stat(o->file, &in)) != 0)
    return false;
  if (in.st_dev != out.st_dev || in.st_ino != out.st_ino) return false;
  fprintf(stderr,
          "rk transpile: refusing to write '%s': it is the input file%s%s%s "
          "(the source would be replaced by its translation)\n",
          o->out, is_stdin ? " (standard input)" : " '",
          is_stdin ? "" : o->file, is_stdin ? "" : "'");
  return true;
}

static int run(int argc, char **argv) {
  options_t o;
  bool help = false;
  int rc = parse(argc, argv, &o, &help);
  if (help) {
    tool_cmd_transpile.help(stdout);
    return TOOL_EXIT_OK;
  }
  if (rc != TOOL_EXIT_OK) return rc;
  if (output_is_input(&o)) return TOOL_EXIT_FAILURE;

  char *source = read_source(o.file);
  if (!source) return TOOL_EXIT_FAILURE;
  rk_transpile_options_t to;
  rk_transpile_options_init(&to);
  to.source_name = strcmp(o.file, "-") == 0 ? "<stdin>" : o.file;
  to.entry = o.entry;
  to.persistent_actors = o.persistent;
  to.wgsl_loop_guard = o.loop_guard;

  char *text = NULL;
  size_t len = 0;
  bool ok = true;
  if (o.target_name) {
    /* With --list too: the source must also be valid for the target. */
    rk_status_t s = rk_transpile(source, o.target, &to, &text);
    if (s == RK_OK) {
      len = strlen(text);
    } else {
      report(s);
      ok = false;
    }
  }
  if (ok && o.list) {
    rk_transpile_free(text);
    text = NULL;
    ok = list_entries(source, &to, o.json, &text, &len);
  }
  free(source);
  if (!ok) return TOOL_EXIT_FAILURE;

  rc = TOOL_EXIT_OK;
  if (!o.out || strcmp(o.out, "-") == 0) {
    if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
      fprintf(stderr, "rk transpile: writing to stdout: %s\n", strerror(errno));
      rc = TOOL_EXIT_FAILURE;
    }
  } else {
    if (rk__write_file_replace(o.out, text, len, RK__WRITE_SPECIAL_IN_PLACE) !=
        RK_OK) {
      fprintf(stderr, "rk transpile: %s\n", rk_last_error());
      rc = TOOL_EXIT_FAILURE;
    }
  }
  free(text);
  return rc;
}

static void help(FILE *out) {
  fputs(
      "Usage: rk transpile FILE --target TARGET [-o OUT] [--entry NAME]\n"
      "                        [--persistent] [--loop-guard]\n"
      "       rk transpile FILE --list [--json] [--target TARGET] [-o OUT]\n"
      "                        [--entry NAME]\n"
      "\n"
      "Translates a kernel written in rk's kernel language (C11 with\n"
      "#include <rk/kernel.h>; see docs/kernel-language.md) into the\n"
      "source language of one backend, without compiling or running it:\n"
      "to see what a backend's compiler gets, to check a kernel against a\n"
      "target this machine lacks (Metal's missing double, say), or to ship\n"
      "translated source. It is rk_transpile() of <rk/codegen.h>.\n"
      "\n"
      "FILE is the kernel source; '-' reads standard input. Its name as\n"
      "given here appears in error messages and in the output's header\n"
      "comment ('<stdin>' for '-').\n"
      "\n"
      "Options:\n"
      "  -t, --target TARGET  the output language:\n"
      "                         c       C11 for the CPU backend\n"
      "                         cuda    CUDA C++ for NVRTC (extern \"C\"\n"
      "                                 __global__ kernels)\n"
      "                         opencl  OpenCL C 1.2 (__kernel functions)\n"
      "                         wgsl    WebGPU Shading Language (@compute\n"
      "                                 functions)\n"
      "                         msl     Metal Shading Language (kernel void)\n"
      "  -o, --output OUT     write to OUT instead of stdout ('-': stdout).\n"
      "                       OUT is replaced only when everything worked;\n"
      "                       on any error it is left as it was. A symbolic\n"
      "                       link is followed (a dangling one refused); a\n"
      "                       FIFO or device is written in place; OUT may\n"
      "                       not be FILE itself\n"
      "  --entry NAME         only this kernel, stencil or handler (types,\n"
      "                       constants and helpers are always kept)\n"
      "  --persistent         with --target cuda only: also emit, for each\n"
      "                       handler h, the persistent actor kernel\n"
      "                       rk_actor_h that keeps h resident on the GPU,\n"
      "                       serving the actor's rings (sm_70 or newer;\n"
      "                       see docs/kernel-language.md)\n"
      "  --loop-guard         with --target wgsl only: loops report an early\n"
      "                       end through a guard buffer at @group(1)\n"
      "                       @binding(0) (what the WebGPU backend compiles\n"
      "                       on adapters that end long loops; see\n"
      "                       docs/webgpu.md)\n"
      "  --list               print the entry points and their launch\n"
      "                       parameters instead of code; with --target the\n"
      "                       source must also be valid for that target\n"
      "  --json               with --list: one JSON object, {\"file\",\n"
      "                       \"entries\": [{\"name\", \"kind\", \"params\":\n"
      "                       [{\"name\", \"type\", \"kind\", \"size\",\n"
      "                       \"elem_size\", \"read_only\"}], \"stencil\"\n"
      "                       ({\"dims\", \"tile\", \"halo\"} or null),\n"
      "                       \"batch_of\", \"shared_bytes\",\n"
      "                       \"dynamic_shared\", \"uses_barrier\",\n"
      "                       \"loops\", \"handler_status\"}]}\n"
      "  -h, --help           show this help\n"
      "\n"
      "Example:\n"
      "  $ cat saxpy.c\n"
      "  #include <rk/kernel.h>\n"
      "  RK_KERNEL void saxpy(int n, float a, const float *x, float *y) {\n"
      "    int i = (int)rk_global_idx_x();\n"
      "    if (i < n) y[i] = a * x[i] + y[i];\n"
      "  }\n"
      "  $ rk transpile saxpy.c --target cuda\n"
      "  /* Generated by rk for target cuda (CUDA C++ for NVRTC) from\n"
      "   *   saxpy.c\n"
      "   * Do not edit: change the kernel source and transpile again. */\n"
      "\n"
      "  extern \"C\" __global__ void saxpy(int n, float a, const float *x, "
      "...\n"
      "  ...\n"
      "  $ rk transpile saxpy.c --list\n"
      "  saxpy.c: 1 entry point\n"
      "\n"
      "  kernel saxpy\n"
      "    shared    0 bytes of block-shared memory\n"
      "    barrier   no\n"
      "    params    n  int            i32      4 bytes\n"
      "              a  float          f32      4 bytes\n"
      "              x  const float *  ptr      8 bytes, 4-byte elements, "
      "read-only\n"
      "              y  float *        ptr      8 bytes, 4-byte elements\n"
      "\n"
      "--list shows, per entry point: its kind (kernel, stencil, handler)\n"
      "and name; for stencils the tile (threads per block; launch with\n"
      "grid = ceil(domain / tile)) and the halo; the static block-shared\n"
      "memory; whether it reaches rk_sync_threads(); and each launch\n"
      "parameter in order: name, C type, argument kind (as rk_arg_t: i32,\n"
      "u32, i64, u64, f32, f64, ptr, struct), argument size and, for\n"
      "buffers, the element size and whether it is read-only. A stencil's\n"
      "list starts at the domain size (its rk_grid_pos_t is implicit).\n"
      "\n"
      "Errors are printed as compilers print them, with the line and a\n"
      "caret under the problem:\n"
      "  saxpy.c:4:11: error: pointer arithmetic is not supported: ...\n"
      "\n"
      "Exit status: 0 success; 1 when the source is refused, FILE cannot be\n"
      "read or OUT cannot be written; 2 on a usage error (unknown target or\n"
      "option, no FILE).\n",
      out);
}

const tool_command_t tool_cmd_transpile = {
    "transpile",
    "translate a kernel source to C, CUDA, OpenCL, WGSL or MSL source", run,
    help};
