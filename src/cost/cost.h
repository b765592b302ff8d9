/* cost.h - the cost model's internals: rate curves per candidate and op
 * class, the profile text format, the machine fingerprint.
 *
 * A profile holds, for each candidate ("scalar", "simd", "opencl0", ...)
 * and each op class, a launch latency and a curve of (working-set bytes,
 * FLOP/s, bytes/s) points measured by `rk calibrate`; a prediction
 * interpolates the rates between points (log-log in size), so a
 * cache-resident size gets its faster rates and a DRAM-bound size its
 * slower ones. GPU candidates add host<->device latency and bandwidth.
 */
#ifndef RK_COST_COST_H_
#define RK_COST_COST_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rk/select.h"

typedef enum rk__cost_class {
  RK__CLASS_ELEMENTWISE = 0,
  RK__CLASS_REDUCTION,
  RK__CLASS_TRANSCENDENTAL,
  RK__CLASS_MATVEC,
  RK__CLASS_MATMUL,
  RK__CLASS_COUNT
} rk__cost_class_t;

/* "elementwise", "reduction", "transcendental", "matvec", "matmul". */
const char *rk__cost_class_name(rk__cost_class_t cls);

enum {
  RK__COST_MAX_POINTS = 24,
  RK__COST_MAX_TARGETS = 12,
};

typedef struct rk__cost_point {
  double bytes;     /* working set of the measured operation */
  double flop_rate; /* FLOP/s */
  double bandwidth; /* bytes/s */
} rk__cost_point_t;

typedef struct rk__cost_curve {
  double launch_s; /* fixed cost of one call */
  size_t count;    /* points, sorted by bytes */
  rk__cost_point_t points[RK__COST_MAX_POINTS];
  bool measured; /* from a profile, not a default */
} rk__cost_curve_t;

typedef struct rk__cost_link {
  double latency_s;
  double bandwidth; /* bytes/s */
} rk__cost_link_t;

typedef struct rk__cost_target {
  char key[32]; /* profile key: "scalar", "simd", "cuda0", "opencl1" */
  rk_exec_target_t target;
  char device_name[128];
  bool software;  /* RK_CAP_SOFTWARE */
  bool candidate; /* offered by predict (software only when included) */
  rk__cost_link_t h2d, d2h; /* GPU only */
  rk__cost_curve_t curves[RK__CLASS_COUNT];
  /* Per-op curves measured by `rk calibrate` (every op of a class has its
   * own speed); count 0: the op uses its class's curve. Never set for
   * matvec and matmul, whose class curve is theirs. */
  rk__cost_curve_t ops[RK_OP_COUNT_];
} rk__cost_target_t;

/* What the machine is: the fingerprint hashes `description`. */
typedef struct rk__machine {
  char cpu_model[128];
  int cpus;
  rk_isa_t isa;
  char description[768]; /* "cpu=...; cpus=2; isa=avx512; gpu=..." */
  char fingerprint[33];
  size_t ntargets;
  rk__cost_target_t targets[RK__COST_MAX_TARGETS]; /* with default rates */
} rk__machine_t;

/* Looks at this machine: CPU, best ISA, every GPU backend's devices (the
 * backends are opened and closed again; failures to open are not errors),
 * once per process.
 * Targets get default rates. `include_software` makes emulated devices
 * candidates too. */
void rk__machine_probe(rk__machine_t *machine, bool include_software);

/* The CPU part of rk__machine_probe alone (scalar and SIMD targets, the
 * description "cpu=...; cpus=N; isa=..." and its fingerprint): no GPU
 * backend is opened. */
void rk__machine_probe_cpu(rk__machine_t *machine);

/* Default (uncalibrated) rates for a target of this kind. */
void rk__cost_target_defaults(rk__cost_target_t *target);

struct rk_cost_model {
  rk__machine_t machine;
  bool from_profile;
  char profile_path[1024];
  char note[1600];  /* why defaults are in use, "" when the profile loaded */
  size_t overrides; /* environment variables applied */
  /* RK_COST_ variables ignored (malformed values, unknown names), as one
   * warning; "" when none. Set by rk__cost_apply_env. */
  char env_note[1536];
  int threads; /* SIMD threads the profile was measured with */
};

/* Parses profile text into model's targets (which must already hold the
 * machine's targets with default rates). On a version or fingerprint
 * mismatch or a syntax error, returns false with the reason in `why`
 * (and leaves the targets as defaults). */
bool rk__cost_profile_parse(rk_cost_model_t *model, const char *text, char *why,
                            size_t why_cap);

/* Formats the model's rates as profile text (malloc'd). NULL when out of
 * memory. `comment` (may be NULL) goes into the header. */
char *rk__cost_profile_format(const rk_cost_model_t *model,
                              const char *comment);

/* Applies RK_COST_<KEY> environment variables; returns how many. What it
 * ignores (malformed values, names that mean nothing on this machine) goes
 * to model->env_note; it prints nothing. */
size_t rk__cost_apply_env(rk_cost_model_t *model);

/* The default profile path for a fingerprint. */
rk_status_t rk__cost_default_path(const char *fingerprint, char *out,
                                  size_t cap);

/* The curve that describes `op` on `target`: its own, else its class's. */
const rk__cost_curve_t *rk__cost_curve_for(const rk__cost_target_t *target,
                                           rk_op_t op);

/* Rates at `bytes`: log-log interpolation between curve points, clamped
 * outside them. */
void rk__cost_curve_rates(const rk__cost_curve_t *curve, double bytes,
                          double *out_flop_rate, double *out_bandwidth);

/* Operation accounting (op.c). */
rk__cost_class_t rk__op_class(rk_op_t op);
void rk__op_io_bytes(const rk_op_desc_t *desc, uint64_t *out_in,
                     uint64_t *out_out);
uint64_t rk__sat_mul(uint64_t a, uint64_t b);
uint64_t rk__sat_add(uint64_t a, uint64_t b);

#endif /* RK_COST_COST_H_ */
