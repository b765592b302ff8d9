/* rk/select.h - choosing where an operation runs: scalar CPU, SIMD CPU or a
 * GPU backend.
 *
 * Two policies:
 *   - the compatibility selector (rk_compat_*): the fixed-threshold rules rk
 *     inherits, reproduced exactly (strict `>` boundaries), with 64-bit
 *     overflow-safe arithmetic and errors instead of aborts;
 *   - the calibrated cost model (rk_cost_model_*), the default: for each
 *     candidate it predicts launch latency + transfer of inputs not resident
 *     there + max(flops / rate, bytes / bandwidth) + read-back, from a profile
 *     measured on this machine by `rk calibrate`, and picks the minimum.
 *
 * The ops library (rk/ops.h) runs each operation where the policy says.
 */
#ifndef RK_SELECT_H_
#define RK_SELECT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rk/backend.h"
#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Execution targets --------------------------------------------------- */

typedef enum rk_exec_kind {
  RK_EXEC_SCALAR = 0, /* plain C on the calling thread */
  RK_EXEC_SIMD,       /* vector instructions (and threads where they pay) */
  RK_EXEC_GPU,        /* a GPU backend through the HAL */
} rk_exec_kind_t;

/* "scalar", "simd", "gpu"; "unknown" otherwise. */
const char *rk_exec_kind_name(rk_exec_kind_t kind);

/* Instruction sets the SIMD kernels are built for. */
typedef enum rk_isa {
  RK_ISA_NONE = 0, /* no vector ISA (scalar code only) */
  RK_ISA_AVX2,     /* AVX2 + FMA */
  RK_ISA_AVX512,   /* AVX-512F */
  RK_ISA_NEON,     /* ARM Advanced SIMD */
} rk_isa_t;

/* "none", "avx2", "avx512", "neon"; "unknown" otherwise. */
const char *rk_isa_name(rk_isa_t isa);
/* The best ISA this CPU supports and rk was built with (run-time check). */
rk_isa_t rk_isa_best(void);
/* Whether this CPU supports `isa` and rk has kernels for it. */
bool rk_isa_supported(rk_isa_t isa);

/* Where an operation runs. */
typedef struct rk_exec_target {
  rk_exec_kind_t kind;
  rk_isa_t isa;              /* RK_EXEC_SIMD: the ISA; else RK_ISA_NONE */
  rk_backend_kind_t backend; /* RK_EXEC_GPU: the backend; else AUTO (0) */
  int device;                /* RK_EXEC_GPU: the device; else 0 */
} rk_exec_target_t;

/* ---- Compatibility selector ---------------------------------------------- */

typedef enum rk_compat_choice {
  RK_COMPAT_SCALAR = 0,
  RK_COMPAT_SIMD,
  RK_COMPAT_GPU,
} rk_compat_choice_t;

/* "Scalar", "SIMD", "GPU". */
const char *rk_compat_choice_name(rk_compat_choice_t choice);

typedef enum rk_complexity {
  RK_COMPLEXITY_LOW = 0,
  RK_COMPLEXITY_MEDIUM,
  RK_COMPLEXITY_HIGH,
} rk_complexity_t;

typedef struct rk_compat_selector {
  double pcie_bandwidth; /* bytes/s; default 32e9 */
  double gpu_flops;      /* FLOP/s; default 20e12 */
  double dispatch_ratio; /* default 5 */
} rk_compat_selector_t;

/* The defaults above. */
void rk_compat_init(rk_compat_selector_t *selector);
/* RK_ERR_INVALID_ARGUMENT for a value <= 0 or not finite (NULL selector
 * too); the selector is unchanged then. */
rk_status_t rk_compat_set_pcie_bandwidth(rk_compat_selector_t *selector,
                                         double bytes_per_second);
rk_status_t rk_compat_set_gpu_flops(rk_compat_selector_t *selector,
                                    double flops_per_second);
rk_status_t rk_compat_set_dispatch_ratio(rk_compat_selector_t *selector,
                                         double ratio);

/* GPU if flops / gpu_flops > ratio * bytes / pcie_bandwidth, else SIMD. */
rk_compat_choice_t rk_compat_select_backend(const rk_compat_selector_t *s,
                                            uint64_t bytes, uint64_t flops);
/* bytes = 4(mk + kn + mn), flops = 2mnk, without overflow. */
rk_compat_choice_t rk_compat_select_for_matmul(const rk_compat_selector_t *s,
                                               uint64_t m, uint64_t n,
                                               uint64_t k);
/* bytes = 12n, flops = n * ops_per_element. */
rk_compat_choice_t rk_compat_select_for_vector_op(const rk_compat_selector_t *s,
                                                  uint64_t n,
                                                  uint64_t ops_per_element);
/* SIMD if n > 1,000,000, else Scalar. */
rk_compat_choice_t rk_compat_select_for_elementwise(
    const rk_compat_selector_t *s, uint64_t n);
/* Low: SIMD if n > 1e6 else Scalar; Medium: GPU if n > 1e5, SIMD if
 * n > 1e4, else Scalar; High: GPU if n > 1e4, SIMD if n > 1e3, else
 * Scalar. */
rk_compat_choice_t rk_compat_select_with_moe(const rk_compat_selector_t *s,
                                             rk_complexity_t complexity,
                                             uint64_t n);

/* ---- Operations ---------------------------------------------------------- */

/* The operations the cost model and the ops library know. Shapes (see
 * rk_op_desc_t): element-wise and reductions use n; matvec is an m x n
 * matrix times an n-vector; matmul is (m x k) times (k x n). */
#define RK_OP_LIST(X)   \
  X(ADD, "add")         \
  X(SUB, "sub")         \
  X(MUL, "mul")         \
  X(SCALE, "scale")     \
  X(AXPY, "axpy")       \
  X(FMA, "fma")         \
  X(DOT, "dot")         \
  X(SUM, "sum")         \
  X(MIN, "min")         \
  X(MAX, "max")         \
  X(RELU, "relu")       \
  X(SIGMOID, "sigmoid") \
  X(EXP, "exp")         \
  X(MATVEC, "matvec")   \
  X(MATMUL, "matmul")   \
  X(TANH, "tanh")       \
  X(LOG, "log")

typedef enum rk_op {
#define RK_OP_ENUM_(name, text) RK_OP_##name,
  RK_OP_LIST(RK_OP_ENUM_)
#undef RK_OP_ENUM_
      RK_OP_COUNT_
} rk_op_t;

/* The name above; "unknown" otherwise. */
const char *rk_op_name(rk_op_t op);
/* RK_ERR_NOT_FOUND for an unknown name. */
rk_status_t rk_op_from_name(const char *name, rk_op_t *out_op);

/* Where the operands are before the operation. */
typedef enum rk_residency {
  RK_RESIDENT_HOST = 0, /* in host memory */
  RK_RESIDENT_DEVICE,   /* already on the GPU candidate's device */
} rk_residency_t;

typedef struct rk_op_desc {
  rk_op_t op;
  uint64_t m, n, k;      /* see RK_OP_LIST; unused sizes are 0 */
  rk_residency_t inputs; /* default RK_RESIDENT_HOST */
  bool result_on_host;   /* the caller reads the result on the host */
} rk_op_desc_t;

/* bytes moved and flops done by one operation (saturating at UINT64_MAX). */
uint64_t rk_op_bytes(const rk_op_desc_t *desc);
uint64_t rk_op_flops(const rk_op_desc_t *desc);

/* ---- Calibrated cost model ---------------------------------------------- */

typedef struct rk_cost_model rk_cost_model_t;

/* One candidate's predicted time, split into its terms (seconds). */
typedef struct rk_prediction {
  rk_exec_target_t target;
  double total_s;
  double launch_s;   /* launch / dispatch latency */
  double transfer_s; /* inputs not resident on the candidate */
  double compute_s;  /* max(flops / rate, bytes / bandwidth) */
  double readback_s; /* result back to the host when needed */
  /* The candidate's rates for this kind of operation were measured (read
   * from a profile); false: rk's default rates, a guess. */
  bool measured;
} rk_prediction_t;

/* Loads this machine's profile (see `rk calibrate`), or safe defaults when
 * it is missing, stale or corrupt; environment variables override single
 * values, and RK_COST_ variables that are malformed or unknown here are
 * ignored. Prints nothing: rk_cost_model_info's note and env_note say what
 * happened (and RK_LOG=warn logs each once per process). The GPU backends
 * are opened once per process to learn the machine's fingerprint (see
 * rk_cost_model_options_t.cpu_only). Never fails on a bad profile; fails
 * only for NULL or out of memory. */
rk_status_t rk_cost_model_open(rk_cost_model_t **out_model);
void rk_cost_model_destroy(rk_cost_model_t *model);

/* Predicts every candidate present for `desc` into out[0..*count) (at most
 * `capacity`), and sets *best to the index of the minimum. A model is never
 * changed after it is opened: several threads may predict with one model
 * at once. */
rk_status_t rk_cost_model_predict(const rk_cost_model_t *model,
                                  const rk_op_desc_t *desc,
                                  rk_prediction_t *out, size_t capacity,
                                  size_t *count, size_t *best);

/* The compatibility selector's answer for an operation, as the ops library
 * asks it under RK_POLICY_COMPAT: matmul -> select_for_matmul; dot ->
 * select_for_vector_op(n, 2); sum, min, max -> (n, 1); matvec -> (m*n, 2)
 * (saturating); every element-wise op -> select_for_elementwise(n). A NULL
 * desc or an unknown op answers Scalar. */
rk_compat_choice_t rk_compat_select_for_op(const rk_compat_selector_t *s,
                                           const rk_op_desc_t *desc);

/* ---- Profiles, model options and calibration ------------------------------
 *
 * A profile is a versioned text file written by `rk calibrate` (or
 * rk_cost_calibrate) and keyed by a fingerprint of this machine (CPU model,
 * CPU count, ISA, GPU devices). By default it lives at
 * <cache>/cost/<fingerprint>.profile, where <cache> is $RK_CACHE_DIR, else
 * $XDG_CACHE_HOME/rk, else ~/.cache/rk; $RK_COST_PROFILE names another file.
 * docs/cost-model.md describes the format and the RK_COST_* variables. */

/* The profile path rk_cost_model_open reads on this machine, into
 * out[0..capacity). RK_ERR_OUT_OF_RANGE when it does not fit;
 * RK_ERR_UNAVAILABLE when there is no cache directory (no HOME). */
rk_status_t rk_cost_profile_path(char *out, size_t capacity);

typedef struct rk_cost_model_options {
  /* Profile to read; NULL: $RK_COST_PROFILE, else rk_cost_profile_path. */
  const char *profile_path;
  /* Make emulated GPU devices (RK_CAP_SOFTWARE: PoCL's CPU device,
   * lavapipe) candidates too; also on with RK_COST_SOFTWARE=1. */
  bool include_software;
  /* Not even RK_LOG=warn logs this model's notes (defaults in use,
   * RK_COST_ variables ignored): the caller shows rk_cost_model_info's
   * note and env_note itself. Nothing is printed either way. */
  bool quiet;
  /* Only the CPU candidates (scalar, SIMD), and no GPU backend opened:
   * without the GPUs the machine's fingerprint is unknown, so the profile
   * read is the newest one in the cost directory measured on this CPU
   * (same model, count and ISA), or the one named above; its CPU rates are
   * used. rk_cost_model_info's fingerprint is that profile's, its machine
   * the CPU alone. rk_ops_create sets it when gpu_backends is 0. */
  bool cpu_only;
} rk_cost_model_options_t;

void rk_cost_model_options_init(rk_cost_model_options_t *options);
/* rk_cost_model_open with options (NULL: defaults). */
rk_status_t rk_cost_model_open_with(const rk_cost_model_options_t *options,
                                    rk_cost_model_t **out_model);

/* Where a model's numbers came from. */
typedef struct rk_cost_model_info {
  bool from_profile;        /* false: safe defaults (see note) */
  const char *profile_path; /* the file read (or looked for) */
  const char *note;         /* why defaults are used; "" otherwise */
  const char *fingerprint;  /* this machine's, 32 hex digits */
  const char *machine;      /* "cpu=...; cpus=N; isa=...; gpu=..." */
  size_t env_overrides;     /* RK_COST_<KEY> variables applied */
  size_t candidate_count;   /* candidates predict offers */
  /* RK_COST_ variables ignored (malformed values, names unknown on this
   * machine), as one warning naming the known ones; "" when none. */
  const char *env_note;
} rk_cost_model_info_t;

/* Fills *out_info; the strings live as long as the model. */
rk_status_t rk_cost_model_info(const rk_cost_model_t *model,
                               rk_cost_model_info_t *out_info);

/* The model's rates as profile text (malloc'd; free() it). */
rk_status_t rk_cost_model_format(const rk_cost_model_t *model, char **out_text);

typedef enum rk_calibrate_level {
  RK_CALIBRATE_QUICK = 0, /* about 10 s */
  RK_CALIBRATE_DEFAULT,   /* under a minute */
  RK_CALIBRATE_THOROUGH,  /* more sizes and repetitions */
} rk_calibrate_level_t;

/* Progress: `fraction` in [0, 1] and what is being measured. */
typedef void (*rk_calibrate_progress_fn_t)(void *user, double fraction,
                                           const char *what);

typedef struct rk_calibrate_options {
  rk_calibrate_level_t level;          /* default RK_CALIBRATE_DEFAULT */
  bool include_software;               /* also measure emulated GPU devices */
  const char *output_path;             /* NULL: the default profile path */
  rk_calibrate_progress_fn_t progress; /* may be NULL */
  void *user;
} rk_calibrate_options_t;

void rk_calibrate_options_init(rk_calibrate_options_t *options);

/* Measures this machine by running the ops (rk/ops.h) forced onto each
 * candidate at several sizes, writes the profile atomically (temporary file
 * and rename) and, if out_model is not NULL, returns a model built from the
 * new measurements. A symbolic link at the output path is followed (its
 * target replaced, the link kept); a dangling link, a directory, a FIFO or
 * a device there is refused with RK_ERR_INVALID_ARGUMENT before anything
 * is measured. Prints nothing (RK_COST_ variables it ignores are in the
 * returned model's info.env_note). Not thread-safe with other
 * calibrations. */
rk_status_t rk_cost_calibrate(const rk_calibrate_options_t *options,
                              rk_cost_model_t **out_model);

#ifdef __cplusplus
}
#endif

#endif /* RK_SELECT_H_ */
