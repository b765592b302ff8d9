/* cmd_devices.c - `rk devices [--json]`: every backend kind, whether it
 * opens here (and why not), its devices, and what RK_BACKEND_AUTO picks.
 *
 * Each backend is opened with rk_backend_open(kind), described, and destroyed
 * before the next one; the result goes out as text or as one JSON object.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk/rk.h"
#include "tool.h"

/* The kinds listed, in order (every kind except RK_BACKEND_AUTO). */
static const rk_backend_kind_t kKinds[] = {RK_BACKEND_CPU, RK_BACKEND_CUDA,
                                           RK_BACKEND_METAL, RK_BACKEND_WEBGPU,
                                           RK_BACKEND_OPENCL};

static const struct {
  uint32_t flag;
  const char *name;
} kCaps[] = {
    {RK_CAP_PERSISTENT_KERNELS, "persistent-kernels"},
    {RK_CAP_COOPERATIVE_LAUNCH, "cooperative-launch"},
    {RK_CAP_MAPPED_HOST_MEMORY, "mapped-host-memory"},
    {RK_CAP_ATOMIC64, "atomic64"},
    {RK_CAP_F64, "f64"},
    {RK_CAP_SOFTWARE, "software"},
    {RK_CAP_INT64, "int64"},
    {RK_CAP_MANAGED_CONCURRENT, "managed-concurrent"},
};

/* The outcome of opening one backend (or RK_BACKEND_AUTO). */
typedef struct probe {
  rk_backend_t *backend; /* NULL when it did not open */
  char reason[4096];     /* rk_last_error() when it did not open */
} probe_t;

static void probe_open(rk_backend_kind_t kind, probe_t *p) {
  p->backend = NULL;
  p->reason[0] = '\0';
  rk_status_t s = rk_backend_open(kind, &p->backend);
  if (s != RK_OK) {
    /* Copy at once: the message lives only until the next rk call. */
    snprintf(p->reason, sizeof p->reason, "%s", rk_last_error());
    p->backend = NULL;
  }
}

static void probe_close(probe_t *p) {
  if (p->backend && rk_backend_destroy(p->backend) != RK_OK)
    fprintf(stderr, "rk devices: closing a backend: %s\n", rk_last_error());
  p->backend = NULL;
}

/* ---- Text --------------------------------------------------------------- */

/* Writes `text`, starting every line after the first with `indent` spaces. */
static void print_indented(const char *text, int indent) {
  for (const char *c = text; *c; ++c) {
    putchar(*c);
    if (*c == '\n') printf("%*s", indent, "");
  }
}

/* Reasons start with the backend's name ("cuda: ..."), which the text output
 * already shows in its first column. */
static const char *without_name(const char *reason, const char *name) {
  size_t len = strlen(name);
  if (strncmp(reason, name, len) == 0 && strncmp(reason + len, ": ", 2) == 0)
    return reason + len + 2;
  return reason;
}

/* How persistent actors run on a device (see rk/actor.h). */
static const char *actor_execution(uint32_t caps) {
  return caps & RK_CAP_PERSISTENT_KERNELS
             ? "resident"
             : "relaunch (emulated: one launch per batch of requests)";
}

static void print_caps_text(uint32_t caps) {
  bool any = false;
  for (size_t i = 0; i < sizeof kCaps / sizeof kCaps[0]; ++i) {
    if (!(caps & kCaps[i].flag)) continue;
    printf("%s%s", any ? ", " : "", kCaps[i].name);
    any = true;
  }
  printf("%s\n", any ? "" : "none");
}

static void print_device_text(const rk_backend_t *be, int d) {
  rk_device_info_t info;
  if (rk_backend_device_info(be, d, &info) != RK_OK) {
    printf("  device %d: no information: %s\n", d, rk_last_error());
    return;
  }
  const char *row = "    %-21s";
  printf("  device %d: %s\n", d, info.name);
  printf(row, "vendor");
  printf("%s\n", info.vendor);
  if (info.arch[0]) {
    printf(row, "architecture");
    printf("%s\n", info.arch);
  }
  printf(row, "compute units");
  printf("%" PRIu32 "\n", info.compute_units);
  printf(row, "memory");
  printf("%.1f GiB\n", (double)info.memory_bytes / (1024.0 * 1024 * 1024));
  printf(row, "max threads/block");
  printf("%" PRIu32 "\n", info.max_threads_per_block);
  printf(row, "shared memory/block");
  if (info.shared_mem_per_block % 1024 == 0)
    printf("%" PRIu64 " KiB\n", info.shared_mem_per_block / 1024);
  else
    printf("%.1f KiB\n", (double)info.shared_mem_per_block / 1024.0);
  printf(row, "capabilities");
  print_caps_text(info.caps);
  printf(row, "persistent actors");
  printf("%s\n", actor_execution(info.caps));
  /* How actors that send to actors (rk_send) get their messages across
   * (rk/actor_k2k.h). */
  printf(row, "actor messaging");
  const bool cpu = strcmp(rk_backend_name(be), "cpu") == 0;
  printf("%s\n", !(info.caps & RK_CAP_PERSISTENT_KERNELS)
                     ? "host-forwarded (after each batch launch)"
                 : cpu
                     ? "direct (channels in memory both workers use)"
                     : "direct between resident kernels and into them "
                       "(channels in mapped host memory); host-forwarded from "
                       "them to CPU or relaunch actors");
}

static void print_backend_text(rk_backend_kind_t kind, const probe_t *p) {
  const char *name = rk_backend_kind_name(kind);
  printf("%-8s ", name);
  if (!p->backend) {
    printf("unavailable: ");
    print_indented(without_name(p->reason, name), 2);
    printf("\n");
    return;
  }
  int count = rk_backend_device_count(p->backend);
  printf("available, %d device%s\n", count, count == 1 ? "" : "s");
  for (int d = 0; d < count; ++d) print_device_text(p->backend, d);
}

static void print_auto_text(const probe_t *p, const char *env) {
  printf("\nAutomatic selection (RK_BACKEND_AUTO): ");
  if (!p->backend) {
    printf("none\n  ");
    print_indented(p->reason, 2);
    printf("\n");
  } else if (env) {
    printf("%s\n  chosen by RK_BACKEND=%s\n", rk_backend_name(p->backend), env);
  } else {
    printf(
        "%s\n"
        "  the first of cuda, metal, webgpu, opencl, cpu with a usable\n"
        "  non-software device; set RK_BACKEND=NAME to choose another\n",
        rk_backend_name(p->backend));
  }
}

/* ---- JSON --------------------------------------------------------------- */

/* Starts a member of a JSON object: `indent` spaces, "key": . */
static void json_key(int indent, const char *key) {
  printf("%*s\"%s\": ", indent, "", key);
}

static void print_device_json(const rk_backend_t *be, int d) {
  rk_device_info_t info;
  printf("        {\n");
  json_key(10, "index");
  printf("%d,\n", d);
  if (rk_backend_device_info(be, d, &info) != RK_OK) {
    json_key(10, "error");
    tool_json_string(stdout, rk_last_error());
    printf("\n        }");
    return;
  }
  json_key(10, "name");
  tool_json_string(stdout, info.name);
  printf(",\n");
  json_key(10, "vendor");
  tool_json_string(stdout, info.vendor);
  printf(",\n");
  json_key(10, "arch");
  tool_json_string(stdout, info.arch);
  printf(",\n");
  json_key(10, "compute_units");
  printf("%" PRIu32 ",\n", info.compute_units);
  json_key(10, "memory_bytes");
  printf("%" PRIu64 ",\n", info.memory_bytes);
  json_key(10, "max_threads_per_block");
  printf("%" PRIu32 ",\n", info.max_threads_per_block);
  json_key(10, "shared_mem_per_block");
  printf("%" PRIu64 ",\n", info.shared_mem_per_block);
  json_key(10, "caps");
  printf("[");
  bool any = false;
  for (size_t i = 0; i < sizeof kCaps / sizeof kCaps[0]; ++i) {
    if (!(info.caps & kCaps[i].flag)) continue;
    printf("%s\"%s\"", any ? ", " : "", kCaps[i].name);
    any = true;
  }
  printf("],\n");
  json_key(10, "persistent_actors");
  tool_json_string(
      stdout, info.caps & RK_CAP_PERSISTENT_KERNELS ? "resident" : "relaunch");
  printf("\n        }");
}

static void print_backend_json(rk_backend_kind_t kind, const probe_t *p) {
  printf("    {\n");
  json_key(6, "name");
  tool_json_string(stdout, rk_backend_kind_name(kind));
  printf(",\n");
  json_key(6, "available");
  printf("%s,\n", p->backend ? "true" : "false");
  json_key(6, "reason");
  tool_json_string(stdout, p->backend ? NULL : p->reason);
  printf(",\n");
  json_key(6, "devices");
  int count = rk_backend_device_count(p->backend);
  printf("[");
  for (int d = 0; d < count; ++d) {
    printf(d ? ",\n" : "\n");
    print_device_json(p->backend, d);
  }
  printf(count ? "\n      ]\n    }" : "]\n    }");
}

static void print_auto_json(const probe_t *p, const char *env) {
  printf("  \"auto\": ");
  tool_json_string(stdout, p->backend ? rk_backend_name(p->backend) : NULL);
  printf(",\n  \"auto_reason\": ");
  tool_json_string(stdout, p->backend ? NULL : p->reason);
  printf(",\n  \"rk_backend_env\": ");
  tool_json_string(stdout, env);
  printf("\n");
}

/* ---- Command ------------------------------------------------------------ */

static int run(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (tool_is_help(argv[i])) {
      tool_cmd_devices.help(stdout);
      return TOOL_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0)
      json = true;
    else if (argv[i][0] == '-')
      return tool_usage_error("devices", "unknown option '%s'", argv[i]);
    else
      return tool_usage_error("devices", "unexpected argument '%s'", argv[i]);
  }

  if (json)
    printf("{\n  \"rk_version\": \"%s\",\n  \"backends\": [\n", rk_version());
  for (size_t i = 0; i < sizeof kKinds / sizeof kKinds[0]; ++i) {
    probe_t p;
    probe_open(kKinds[i], &p);
    if (json) {
      if (i) printf(",\n");
      print_backend_json(kKinds[i], &p);
    } else {
      print_backend_text(kKinds[i], &p);
    }
    probe_close(&p);
  }

  const char *env = getenv("RK_BACKEND");
  if (env && !*env) env = NULL; /* empty is the same as unset */
  probe_t autop;
  probe_open(RK_BACKEND_AUTO, &autop);
  if (json) {
    printf("\n  ],\n");
    print_auto_json(&autop, env);
    printf("}\n");
  } else {
    print_auto_text(&autop, env);
  }
  probe_close(&autop);
  return TOOL_EXIT_OK;
}

static void help(FILE *out) {
  fputs(
      "Usage: rk devices [--json]\n"
      "\n"
      "Lists every backend kind rk knows (cpu, cuda, metal, webgpu, opencl),\n"
      "whether it can be opened on this machine, and if not, why not; then\n"
      "describes each device of the backends that open, and names the\n"
      "backend that automatic selection (RK_BACKEND_AUTO) picks. Unavailable\n"
      "backends are normal: a build or machine usually has only some.\n"
      "\n"
      "Options:\n"
      "  --json      print one JSON object instead of text\n"
      "  -h, --help  show this help\n"
      "\n"
      "Example:\n"
      "  $ rk devices\n"
      "  cpu      available, 1 device\n"
      "    device 0: AMD EPYC 7B13\n"
      "      vendor               AuthenticAMD\n"
      "      ...\n"
      "  cuda     unavailable: this build of rk has no cuda backend\n"
      "  ...\n"
      "\n"
      "  Automatic selection (RK_BACKEND_AUTO): cpu\n"
      "    ...\n"
      "\n"
      "Output, per device:\n"
      "  compute units        cores (cpu), SMs (cuda) or compute units\n"
      "  memory               device memory; system memory for cpu\n"
      "  max threads/block    the largest block a launch may use\n"
      "  shared memory/block  block-shared memory (RK_SHARED arrays plus\n"
      "                       the launch's dynamic shared memory)\n"
      "  capabilities         persistent-kernels  a kernel may stay resident\n"
      "                       cooperative-launch  grid-wide sync works\n"
      "                       mapped-host-memory  the device reaches host "
      "memory\n"
      "                       atomic64            64-bit atomics in kernels\n"
      "                       f64                 doubles in kernels\n"
      "                       software            an emulation (lavapipe,\n"
      "                                           PoCL); auto never picks it\n"
      "\n"
      "RK_BACKEND_AUTO takes RK_BACKEND if it is set; otherwise the first of\n"
      "cuda, metal, webgpu, opencl, cpu with a non-software device.\n"
      "\n"
      "JSON (--json), one object:\n"
      "  {\"rk_version\": \"0.1.0\",\n"
      "   \"backends\": [{\"name\": \"cpu\", \"available\": true,\n"
      "                 \"reason\": null (or why it did not open),\n"
      "                 \"devices\": [{\"index\": 0, \"name\", \"vendor\",\n"
      "                              \"compute_units\", \"memory_bytes\",\n"
      "                              \"max_threads_per_block\",\n"
      "                              \"shared_mem_per_block\" (bytes),\n"
      "                              \"caps\": [\"f64\", ...]}]},\n"
      "                ...],\n"
      "   \"auto\": \"cpu\" (or null when nothing opens),\n"
      "   \"auto_reason\": null (or why nothing opens),\n"
      "   \"rk_backend_env\": null (or the value of RK_BACKEND)}\n"
      "\n"
      "Exit status: 0, even when backends are unavailable; 2 on a usage "
      "error.\n",
      out);
}

const tool_command_t tool_cmd_devices = {
    "devices", "list the backends, whether each works here, and their devices",
    run, help};
