/* main.c - the `rk` command: dispatch to subcommands, help and version.
 *
 *   rk <command> [options]     runs a command from kCommands below
 *   rk help [command]          prints help (also rk --help, rk <cmd> --help)
 *   rk --version               the same as rk version
 *
 * Each command is in cmd_<name>.c; tool.h says how to add one.
 */
#include <stdio.h>
#include <string.h>

#include "rk/rk.h"
#include "tool.h"

static const tool_command_t *const kCommands[] = {
    &tool_cmd_devices, &tool_cmd_demo,      &tool_cmd_transpile,
    &tool_cmd_select,  &tool_cmd_calibrate, &tool_cmd_cache,
    &tool_cmd_version, &tool_cmd_cluster,   &tool_cmd_bench,
};
enum { kCommandCount = sizeof kCommands / sizeof kCommands[0] };

static const tool_command_t *find_command(const char *name) {
  for (int i = 0; i < kCommandCount; ++i)
    if (strcmp(kCommands[i]->name, name) == 0) return kCommands[i];
  return NULL;
}

static void print_help(FILE *out) {
  fprintf(out,
          "rk %s - a runtime for GPU-style compute kernels\n"
          "\n"
          "rk runs compute kernels written once in its kernel language (C11\n"
          "with #include <rk/kernel.h>) on one of several backends: cpu,\n"
          "cuda, metal, webgpu or opencl. Programs use it through the librk\n"
          "library, which picks the best backend present at run time. Which\n"
          "backends are available depends on how rk was built and on the\n"
          "machine; this command shows them, checks that they work, and\n"
          "shows what a kernel becomes in each backend's language.\n"
          "\n"
          "Usage: rk <command> [options]\n"
          "       rk help [command]\n"
          "       rk --version [--json]\n"
          "\n"
          "Commands:\n",
          rk_version());
  for (int i = 0; i < kCommandCount; ++i)
    fprintf(out, "  %-10s %s\n", kCommands[i]->name, kCommands[i]->summary);
  fprintf(out, "  %-10s %s\n", "help", "show this help, or a command's help");
  fputs(
      "\n"
      "Environment:\n"
      "  RK_BACKEND=NAME    use this backend instead of choosing one:\n"
      "                     cpu, cuda, metal, webgpu, opencl (or auto). A\n"
      "                     backend that cannot be opened is an error, never\n"
      "                     a silent fallback.\n"
      "  RK_CC, CC          C compiler for CPU kernels, with any arguments\n"
      "                     (\"ccache gcc\"); RK_CC wins; default: cc\n"
      "  RK_CACHE_DIR=DIR   cache of compiled kernels; default:\n"
      "                     $XDG_CACHE_HOME/rk, or ~/.cache/rk\n"
      "  RK_CPU_THREADS=N   threads of the CPU backend, 1 to 1024;\n"
      "                     default: one per CPU this process may use\n"
      "  RK_CPU_SPIN_US=US  microseconds idle CPU workers spin before they\n"
      "                     sleep, 0 to 1000000; default: 200\n"
      "  RK_OPENCL_LIB=PATH  the OpenCL ICD loader to use (default\n"
      "                     libOpenCL.so.1)\n"
      "  RK_WEBGPU_LIB=PATH  a webgpu.h implementation (wgpu-native, Dawn);\n"
      "                     default: the wgpu venv, then the system's\n"
      "  RK_ACTOR_SPIN_US=US  how long actor sides spin before parking;\n"
      "                     default 200 (0 on software devices)\n"
      "  RK_ACTOR_RELAUNCH=1  emulate persistent actors by relaunch even\n"
      "                     where they could stay resident\n"
      "  RK_OPS_THREADS=N, RK_BLAS_LIB=PATH|none  ops library threads and\n"
      "                     BLAS (see docs/ops.md)\n"
      "  RK_COST_PROFILE=FILE, RK_COST_*  the cost model's profile and\n"
      "                     single-value overrides (see rk help calibrate)\n"
      "  RK_LOG=warn|debug  the library's warnings (warn), and what vendor\n"
      "                     libraries printed while rk probed them (debug),\n"
      "                     on stderr; unset, the library prints nothing\n"
      "  RK_TRACE=FILE      write a timeline of what rk does (compiles,\n"
      "                     launches, copies, actor messages, cost\n"
      "                     decisions) to FILE at exit, for Perfetto;\n"
      "                     %p: the process id (see docs/tracing.md)\n"
      "\n"
      "Example:\n"
      "  rk devices                      # which backends and devices are "
      "here?\n"
      "  RK_BACKEND=cpu rk demo          # compile, run and check a kernel\n"
      "  rk transpile k.c --target cuda  # k.c as CUDA C++, on stdout\n"
      "  rk version                      # versions, and the vendor libraries\n"
      "                                  # each backend finds here\n"
      "\n"
      "Exit status: 0 success, 1 failure, 2 usage error.\n"
      "Run 'rk help <command>' for a command's options and output.\n",
      out);
}

/* rk help [command] */
static int run_help(int argc, char **argv) {
  if (argc > 3)
    return tool_usage_error(NULL, "help takes one command name, got %d",
                            argc - 2);
  if (argc < 3 || strcmp(argv[2], "help") == 0 || tool_is_help(argv[2])) {
    print_help(stdout);
    return TOOL_EXIT_OK;
  }
  const tool_command_t *cmd = find_command(argv[2]);
  if (!cmd) return tool_usage_error(NULL, "unknown command '%s'", argv[2]);
  cmd->help(stdout);
  return TOOL_EXIT_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_help(stderr);
    return TOOL_EXIT_USAGE;
  }
  const char *first = argv[1];
  if (tool_is_help(first)) {
    print_help(stdout);
    return TOOL_EXIT_OK;
  }
  if (strcmp(first, "--version") == 0)
    return tool_cmd_version.run(argc - 1, argv + 1);
  if (strcmp(first, "help") == 0) return run_help(argc, argv);
  if (first[0] == '-')
    return tool_usage_error(NULL, "unknown option '%s'", first);
  const tool_command_t *cmd = find_command(first);
  if (!cmd) return tool_usage_error(NULL, "unknown command '%s'", first);
  return cmd->run(argc - 1, argv + 1);
}
