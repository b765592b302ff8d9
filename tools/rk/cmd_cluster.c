/* cmd_cluster.c - `rk cluster [--json]`: whether this rk can join a cluster
 * (docs/cluster.md): the transport (UCX, loaded at run time), its version,
 * or why it is not available; and the RK_CLUSTER_* settings in effect.
 *
 *   cluster transport: UCX 1.13.1 (available)
 *   UCX_TLS: (UCX's default)
 *   RK_CLUSTER_LISTEN: (not set)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk/rk.h"
#include "tool.h"

static void help(FILE *out) {
  fputs(
      "Usage: rk cluster [--json]\n"
      "\n"
      "Says whether this rk can form a cluster with other processes: the\n"
      "transport (UCX active messages, libucp loaded at run time; $RK_UCX_LIB\n"
      "names another library), its version, or why it is not available\n"
      "(the paths tried). Also shows the settings a cluster would use:\n"
      "UCX_TLS and RK_CLUSTER_LISTEN, RK_CLUSTER_CONNECT, RK_CLUSTER_NAME,\n"
      "RK_CLUSTER_TOKEN (shown as set or not, never printed),\n"
      "RK_CLUSTER_MAX_PEERS (peers held at once), RK_CLUSTER_SPIN_US, and\n"
      "whether the MPI launcher path can load MPI (Open MPI; $RK_MPI_LIB).\n"
      "See docs/cluster.md.\n"
      "\n"
      "Options:\n"
      "  --json   one JSON object: {\"transport\": \"ucx\", \"available\",\n"
      "           \"version\", \"reason\", \"mpi\": {\"available\", "
      "\"version\",\n"
      "           \"reason\"}}\n"
      "\n"
      "Exit status: 0 available, 1 not available, 2 usage error.\n",
      out);
}

static void json_string(const char *s) {
  putchar('"');
  for (; s && *s; ++s) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      printf("\\%c", ch);
    else if (ch < 0x20)
      printf("\\u%04x", ch);
    else
      putchar(ch);
  }
  putchar('"');
}

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v && *v ? v : fallback;
}

static int run(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--json")) {
      json = true;
    } else {
      fprintf(stderr, "rk cluster: unknown argument '%s'\n", argv[i]);
      return TOOL_EXIT_USAGE;
    }
  }
  const char *version = NULL;
  rk_status_t s = rk_cluster_available(&version);
  static char reason[2048];
  snprintf(reason, sizeof reason, "%s", s == RK_OK ? "" : rk_last_error());
  const char *mpi_version = NULL;
  rk_status_t ms = rk_cluster_mpi_available(&mpi_version);
  static char mpi_reason[2048];
  snprintf(mpi_reason, sizeof mpi_reason, "%s",
           ms == RK_OK ? "" : rk_last_error());
  if (json) {
    printf("{\"transport\": \"ucx\", \"available\": %s, \"version\": ",
           s == RK_OK ? "true" : "false");
    if (version)
      json_string(version);
    else
      fputs("null", stdout);
    fputs(", \"reason\": ", stdout);
    json_string(reason);
    printf(", \"mpi\": {\"available\": %s, \"version\": ",
           ms == RK_OK ? "true" : "false");
    if (mpi_version)
      json_string(mpi_version);
    else
      fputs("null", stdout);
    fputs(", \"reason\": ", stdout);
    json_string(mpi_reason);
    fputs("}}\n", stdout);
  } else {
    if (s == RK_OK)
      printf("cluster transport: UCX %s (available)\n", version);
    else
      printf("cluster transport: not available: %s\n", reason);
    if (ms == RK_OK)
      printf("MPI launcher: %s (available)\n",
             mpi_version ? mpi_version : "Open MPI");
    else
      printf("MPI launcher: not available: %s\n", mpi_reason);
    printf("UCX_TLS: %s\n", env_or("UCX_TLS", "(UCX's default)"));
    printf("RK_CLUSTER_LISTEN: %s\n", env_or("RK_CLUSTER_LISTEN", "(not set)"));
    printf("RK_CLUSTER_CONNECT: %s\n",
           env_or("RK_CLUSTER_CONNECT", "(not set)"));
    printf("RK_CLUSTER_NAME: %s\n", env_or("RK_CLUSTER_NAME", "(host:pid)"));
    printf("RK_CLUSTER_TOKEN: %s\n",
           getenv("RK_CLUSTER_TOKEN") ? "(set)" : "(not set)");
    printf("RK_CLUSTER_MAX_PEERS: %s\n",
           env_or("RK_CLUSTER_MAX_PEERS", "(256 peers at once)"));
    printf("RK_CLUSTER_SPIN_US: %s\n",
           env_or("RK_CLUSTER_SPIN_US", "(100; 0 where one CPU is allowed)"));
  }
  return s == RK_OK ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

const tool_command_t tool_cmd_cluster = {
    "cluster", "whether this rk can form a cluster (UCX) and why not", run,
    help};
