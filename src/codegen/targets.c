/* Per-target facts of the transpiler (targets.h): the targets' names,
 * what each can express and how it runs stencils, and the names each
 * language reserves. The printers spell things; what a target is, is
 * decided here. */
#include "codegen/targets.h"

#include <ctype.h>
#include <string.h>

#include "base/error.h"

/* ---- Names of the targets ------------------------------------------------
 */

static const char *const kTargetNames[RK_TARGET_COUNT_] = {
    [RK_TARGET_C] = "c",           [RK_TARGET_CUDA] = "cuda",
    [RK_TARGET_OPENCL] = "opencl", [RK_TARGET_WGSL] = "wgsl",
    [RK_TARGET_MSL] = "msl",
};

const char *rk_target_name(rk_target_t target) {
  return (unsigned)target < RK_TARGET_COUNT_ ? kTargetNames[target] : "unknown";
}

rk_status_t rk_target_from_name(const char *name, rk_target_t *out_target) {
  if (!name || !out_target)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "rk_target_from_name: NULL");
  for (int t = 0; t < RK_TARGET_COUNT_; ++t) {
    const char *a = kTargetNames[t], *b = name;
    while (*a && tolower((unsigned char)*b) == *a) a++, b++;
    if (!*a && !*b) {
      *out_target = (rk_target_t)t;
      return RK_OK;
    }
  }
  return rk__fail(RK_ERR_INVALID_ARGUMENT,
                  "unknown target '%.64s' (known: c, cuda, opencl, wgsl, msl)",
                  name);
}

/* ---- Capabilities ----------------------------------------------------------
 */

cg_caps_t rk__cg_target_caps(rk_target_t target) {
  cg_caps_t caps;
  memset(&caps, 0, sizeof caps);
  caps.target_name = rk_target_name(target);
  caps.i64 = target != RK_TARGET_WGSL;
  caps.f64 = target != RK_TARGET_WGSL && target != RK_TARGET_MSL;
  caps.staged_stencils = target != RK_TARGET_C;
  return caps;
}

cg_caps_t rk__cg_any_target_caps(void) {
  cg_caps_t caps;
  memset(&caps, 0, sizeof caps);
  caps.i64 = caps.f64 = true;
  return caps;
}

/* ---- Reserved names: the C family ------------------------------------------
 */

/* The C library names <rk/kernel.h> brings in (math.h, stdint.h,
 * stddef.h), and device math every GPU language predefines. */
static const char *const kMathNames[] = {
    "acos",        "acosf",        "acosh",       "acoshf",      "asin",
    "asinf",       "asinh",        "asinhf",      "atan",        "atanf",
    "atan2",       "atan2f",       "atanh",       "atanhf",      "cbrt",
    "cbrtf",       "ceil",         "ceilf",       "copysign",    "copysignf",
    "cos",         "cosf",         "cosh",        "coshf",       "erf",
    "erff",        "erfc",         "erfcf",       "exp",         "expf",
    "exp2",        "exp2f",        "exp10",       "exp10f",      "expm1",
    "expm1f",      "fabs",         "fabsf",       "fdim",        "fdimf",
    "floor",       "floorf",       "fma",         "fmaf",        "fmax",
    "fmaxf",       "fmin",         "fminf",       "fmod",        "fmodf",
    "frexp",       "frexpf",       "hypot",       "hypotf",      "ilogb",
    "ilogbf",      "ldexp",        "ldexpf",      "lgamma",      "lgammaf",
    "llrint",      "llrintf",      "llround",     "llroundf",    "log",
    "logf",        "log10",        "log10f",      "log1p",       "log1pf",
    "log2",        "log2f",        "logb",        "logbf",       "lrint",
    "lrintf",      "lround",       "lroundf",     "modf",        "modff",
    "nan",         "nanf",         "nearbyint",   "nearbyintf",  "nextafter",
    "nextafterf",  "nexttoward",   "nexttowardf", "pow",         "powf",
    "remainder",   "remainderf",   "remquo",      "remquof",     "rint",
    "rintf",       "round",        "roundf",      "scalbln",     "scalblnf",
    "scalbn",      "scalbnf",      "sin",         "sinf",        "sinh",
    "sinhf",       "sqrt",         "sqrtf",       "tan",         "tanf",
    "tanh",        "tanhf",        "tgamma",      "tgammaf",     "trunc",
    "truncf",      "j0",           "j1",          "jn",          "y0",
    "y1",          "yn",           "gamma",       "signgam",     "drem",
    "finite",      "significand",  "sincos",      "sincosf",     "isnan",
    "isinf",       "isfinite",     "isnormal",    "signbit",     "fpclassify",
    "isgreater",   "isless",       "isunordered", "rsqrt",       "rsqrtf",
    "min",         "max",          "abs",         "labs",        "llabs",
    "div",         "clamp",        "errno",       "assert",      "NULL",
    "offsetof",    "INFINITY",     "NAN",         "HUGE_VAL",    "HUGE_VALF",
    "M_PI",        "M_E",          "M_PI_2",      "M_PI_4",      "M_1_PI",
    "M_2_PI",      "M_SQRT2",      "M_LN2",       "M_LN10",      "M_LOG2E",
    "M_LOG10E",    "M_SQRT1_2",    "M_2_SQRTPI",  "FLT_MAX",     "FLT_MIN",
    "FLT_EPSILON", "DBL_MAX",      "DBL_MIN",     "DBL_EPSILON", "INT_MAX",
    "INT_MIN",     "UINT_MAX",     "INT8_MAX",    "INT16_MAX",   "INT32_MAX",
    "INT64_MAX",   "INT8_MIN",     "INT16_MIN",   "INT32_MIN",   "INT64_MIN",
    "UINT8_MAX",   "UINT16_MAX",   "UINT32_MAX",  "UINT64_MAX",  "SIZE_MAX",
    "PTRDIFF_MAX", "INTPTR_MAX",   "UINTPTR_MAX", "CHAR_BIT",    "wchar_t",
    "max_align_t", "int_least8_t", "intmax_t",    "uintmax_t",   "printf",
};

/* C++ keywords (CUDA and MSL). */
static const char *const kCxxNames[] = {
    "alignas",    "alignof",       "and",          "and_eq",
    "bitand",     "bitor",         "catch",        "char8_t",
    "char16_t",   "char32_t",      "class",        "compl",
    "concept",    "consteval",     "constexpr",    "constinit",
    "const_cast", "co_await",      "co_return",    "co_yield",
    "decltype",   "delete",        "dynamic_cast", "explicit",
    "export",     "friend",        "mutable",      "namespace",
    "new",        "noexcept",      "not",          "not_eq",
    "nullptr",    "operator",      "or",           "or_eq",
    "private",    "protected",     "public",       "reinterpret_cast",
    "requires",   "static_assert", "static_cast",  "template",
    "this",       "thread_local",  "throw",        "try",
    "typeid",     "typename",      "using",        "virtual",
    "xor",        "xor_eq",        "std",          "main",
};

static const char *const kCudaNames[] = {
    "threadIdx", "blockIdx",    "blockDim", "gridDim",     "warpSize",
    "dim3",      "clock",       "clock64",  "malloc",      "free",
    "memcpy",    "memset",      "umin",     "umax",        "llmin",
    "llmax",     "ullmin",      "ullmax",   "saturate",    "brev",
    "trap",      "cudaError_t", "half",     "nv_bfloat16",
};

static const char *const kOpenclNames[] = {
    "kernel",
    "global",
    "local",
    "constant",
    "private",
    "read_only",
    "write_only",
    "read_write",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "half",
    "size_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "sampler_t",
    "event_t",
    "image1d_t",
    "image2d_t",
    "image3d_t",
    "image1d_array_t",
    "image1d_buffer_t",
    "image2d_array_t",
    "cl_mem_fence_flags",
    "barrier",
    "mem_fence",
    "read_mem_fence",
    "write_mem_fence",
    "mad",
    "mad24",
    "mul24",
    "mad_hi",
    "mad_sat",
    "mul_hi",
    "rotate",
    "upsample",
    "popcount",
    "clz",
    "ctz",
    "hadd",
    "rhadd",
    "add_sat",
    "sub_sat",
    "abs_diff",
    "degrees",
    "radians",
    "mix",
    "step",
    "smoothstep",
    "sign",
    "cross",
    "dot",
    "distance",
    "length",
    "normalize",
    "fast_distance",
    "fast_length",
    "fast_normalize",
    "isequal",
    "isnotequal",
    "isgreaterequal",
    "islessequal",
    "islessgreater",
    "isordered",
    "any",
    "all",
    "bitselect",
    "select",
    "shuffle",
    "shuffle2",
    "fract",
    "cospi",
    "sinpi",
    "tanpi",
    "acospi",
    "asinpi",
    "atanpi",
    "atan2pi",
    "maxmag",
    "minmag",
    "pown",
    "powr",
    "rootn",
    "prefetch",
    "wait_group_events",
    "async_work_group_copy",
    "async_work_group_strided_copy",
    "printf",
    "kernel_exec",
    "vec_step",
    "sampler",
    "complex",
    "imaginary",
    "packed",
    "vector",
    "typename",
    "entry",
};

static const char *const kMslNames[] = {
    "kernel",      "vertex",      "fragment",    "device",
    "constant",    "threadgroup", "thread",      "threadgroup_imageblock",
    "ray_data",    "object_data", "visible",     "stage_in",
    "uchar",       "ushort",      "uint",        "ulong",
    "half",        "bfloat",      "size_t",      "ptrdiff_t",
    "metal",       "array",       "sampler",     "texture1d",
    "texture2d",   "texture3d",   "texturecube", "depth2d",
    "atomic_int",  "atomic_uint", "atomic_bool", "atomic_float",
    "simd",        "patch",       "mesh",        "object",
    "intersector",
};

static const char *const kOpenclPrefixes[] = {
    "atomic_", "atom_",      "get_",        "convert_",    "as_",
    "vload",   "vstore",     "read_image",  "write_image", "native_",
    "half_",   "sub_group_", "work_group_",
};

static bool in_list(const char *const *list, size_t n, const char *name) {
  for (size_t i = 0; i < n; ++i)
    if (list[i][0] == name[0] && strcmp(list[i], name) == 0) return true;
  return false;
}

#define IN_LIST(list, name) in_list(list, sizeof list / sizeof list[0], name)

/* int2, float4, uchar16, float4x4, longlong2 ... vector and matrix types of
 * CUDA, OpenCL and MSL. */
static bool is_vector_type_name(const char *name) {
  static const char *const kBases[] = {
      "bool",         "char",         "uchar",        "short",
      "ushort",       "int",          "uint",         "long",
      "ulong",        "half",         "float",        "double",
      "longlong",     "ulonglong",    "bfloat",       "packed_float",
      "packed_int",   "packed_uint",  "packed_half",  "packed_char",
      "packed_uchar", "packed_short", "packed_ushort"};
  for (size_t i = 0; i < sizeof kBases / sizeof kBases[0]; ++i) {
    size_t n = strlen(kBases[i]);
    if (strncmp(name, kBases[i], n) != 0) continue;
    const char *s = name + n;
    if (*s < '1' || *s > '9') continue;
    while (*s >= '0' && *s <= '9') s++;
    if (*s == '\0') return true;
    if (*s == 'x' && s[1] >= '1' && s[1] <= '9') {
      s += 2;
      while (*s >= '0' && *s <= '9') s++;
      if (*s == '\0') return true;
    }
  }
  return false;
}

/* ---- Reserved names: WGSL ---------------------------------------------------
 */

/* Keywords, reserved words, predeclared types, enumerants and built-in
 * functions of WGSL. Shadowing predeclared names is legal WGSL, but the
 * output itself uses them (f32(x), select, min), so all are renamed. */
static const char *const kWgslNames[] = {
    "_",
    "alias",
    "break",
    "case",
    "const",
    "const_assert",
    "continue",
    "continuing",
    "default",
    "diagnostic",
    "discard",
    "else",
    "enable",
    "false",
    "fn",
    "for",
    "if",
    "let",
    "loop",
    "override",
    "requires",
    "return",
    "struct",
    "switch",
    "true",
    "var",
    "while",
    /* reserved words */
    "NULL",
    "Self",
    "abstract",
    "active",
    "alignas",
    "alignof",
    "as",
    "asm",
    "asm_fragment",
    "async",
    "attribute",
    "auto",
    "await",
    "become",
    "binding_array",
    "cast",
    "catch",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "coherent",
    "column_major",
    "common",
    "compile",
    "compile_fragment",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "crate",
    "debugger",
    "decltype",
    "delete",
    "demote",
    "demote_to_helper",
    "do",
    "dynamic_cast",
    "enum",
    "explicit",
    "export",
    "extends",
    "extern",
    "external",
    "fallthrough",
    "filter",
    "final",
    "finally",
    "friend",
    "from",
    "fxgroup",
    "get",
    "goto",
    "groupshared",
    "highp",
    "impl",
    "implements",
    "import",
    "inline",
    "instanceof",
    "interface",
    "layout",
    "lowp",
    "macro",
    "macro_rules",
    "match",
    "mediump",
    "meta",
    "mod",
    "module",
    "move",
    "mut",
    "mutable",
    "namespace",
    "new",
    "nil",
    "noexcept",
    "noinline",
    "nointerpolation",
    "non_coherent",
    "noncoherent",
    "noperspective",
    "null",
    "nullptr",
    "of",
    "operator",
    "package",
    "packoffset",
    "partition",
    "pass",
    "patch",
    "pixelfragment",
    "precise",
    "precision",
    "premerge",
    "priv",
    "protected",
    "pub",
    "public",
    "readonly",
    "ref",
    "regardless",
    "register",
    "reinterpret_cast",
    "require",
    "resource",
    "restrict",
    "self",
    "set",
    "shared",
    "sizeof",
    "smooth",
    "snorm",
    "static",
    "static_assert",
    "static_cast",
    "std",
    "subroutine",
    "super",
    "target",
    "template",
    "this",
    "thread_local",
    "throw",
    "trait",
    "try",
    "type",
    "typedef",
    "typeid",
    "typename",
    "typeof",
    "union",
    "unless",
    "unorm",
    "unsafe",
    "unsized",
    "use",
    "using",
    "varying",
    "virtual",
    "volatile",
    "wgsl",
    "where",
    "with",
    "writeonly",
    "yield",
    /* predeclared types and enumerants */
    "bool",
    "f16",
    "f32",
    "i32",
    "u32",
    "array",
    "atomic",
    "ptr",
    "sampler",
    "sampler_comparison",
    "read",
    "write",
    "read_write",
    "function",
    "private",
    "workgroup",
    "uniform",
    "storage",
    "handle",
    "perspective",
    "linear",
    "flat",
    "center",
    "centroid",
    "sample",
    "first",
    "either",
    /* built-in functions */
    "abs",
    "acos",
    "acosh",
    "all",
    "any",
    "arrayLength",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitcast",
    "ceil",
    "clamp",
    "cos",
    "cosh",
    "countLeadingZeros",
    "countOneBits",
    "countTrailingZeros",
    "cross",
    "degrees",
    "determinant",
    "distance",
    "dot",
    "dot4I8Packed",
    "dot4U8Packed",
    "exp",
    "exp2",
    "extractBits",
    "faceForward",
    "firstLeadingBit",
    "firstTrailingBit",
    "floor",
    "fma",
    "fract",
    "frexp",
    "insertBits",
    "inverseSqrt",
    "ldexp",
    "length",
    "log",
    "log2",
    "max",
    "min",
    "mix",
    "modf",
    "normalize",
    "pow",
    "quantizeToF16",
    "radians",
    "reflect",
    "refract",
    "reverseBits",
    "round",
    "saturate",
    "select",
    "sign",
    "sin",
    "sinh",
    "smoothstep",
    "sqrt",
    "step",
    "storageBarrier",
    "tan",
    "tanh",
    "textureBarrier",
    "transpose",
    "trunc",
    "workgroupBarrier",
    "workgroupUniformLoad",
    "fwidth",
    "fwidthCoarse",
    "fwidthFine",
};

/* Families of predeclared names: vec2<f32>, vec3i, mat4x4f, texture_2d,
 * atomicAdd, pack4x8snorm, dpdx, subgroupAdd, quadBroadcast. */
static const char *const kWgslPrefixes[] = {
    "vec",    "mat", "texture",  "atomic", "pack",
    "unpack", "dpd", "subgroup", "quad",
};

static bool wgsl_reserves(const char *name) {
  for (size_t i = 0; i < sizeof kWgslNames / sizeof *kWgslNames; ++i)
    if (kWgslNames[i][0] == name[0] && strcmp(kWgslNames[i], name) == 0)
      return true;
  for (size_t i = 0; i < sizeof kWgslPrefixes / sizeof *kWgslPrefixes; ++i) {
    size_t n = strlen(kWgslPrefixes[i]);
    if (strncmp(name, kWgslPrefixes[i], n) != 0) continue;
    char c = name[n];
    /* vec2, mat3x3, texture_2d, atomicAdd, pack4x8..., but not `vector`,
     * `matrix` or `quadrant` */
    if (c == '\0' || c == '_' || (c >= '0' && c <= '9') ||
        (c >= 'A' && c <= 'Z'))
      return true;
  }
  return false;
}

/* The built-in functions are the names from "abs" to the end of
 * kWgslNames. */
bool rk__cg_wgsl_builtin_function(const char *name) {
  const size_t n = sizeof kWgslNames / sizeof *kWgslNames;
  size_t first = 0;
  while (first < n && strcmp(kWgslNames[first], "abs") != 0) first++;
  for (size_t i = first; i < n; ++i)
    if (strcmp(kWgslNames[i], name) == 0) return true;
  return false;
}

bool rk__cg_target_reserves(rk_target_t target, const char *name) {
  switch (target) {
    case RK_TARGET_C:
      return IN_LIST(kMathNames, name);
    case RK_TARGET_CUDA:
      return IN_LIST(kMathNames, name) || IN_LIST(kCxxNames, name) ||
             IN_LIST(kCudaNames, name) || is_vector_type_name(name) ||
             (strncmp(name, "atomic", 6) == 0 && name[6] >= 'A' &&
              name[6] <= 'Z') ||
             strncmp(name, "make_", 5) == 0;
    case RK_TARGET_OPENCL:
      if (IN_LIST(kMathNames, name) || IN_LIST(kOpenclNames, name) ||
          is_vector_type_name(name))
        return true;
      for (size_t i = 0; i < sizeof kOpenclPrefixes / sizeof *kOpenclPrefixes;
           ++i)
        if (strncmp(name, kOpenclPrefixes[i], strlen(kOpenclPrefixes[i])) == 0)
          return true;
      return false;
    case RK_TARGET_MSL:
      return IN_LIST(kCxxNames, name) || IN_LIST(kMslNames, name) ||
             is_vector_type_name(name);
    case RK_TARGET_WGSL:
      return wgsl_reserves(name);
    default:
      return false;
  }
}

const char *rk__cg_reserved_by(const char *name) {
  static const rk_target_t kOrder[] = {RK_TARGET_C, RK_TARGET_CUDA,
                                       RK_TARGET_OPENCL, RK_TARGET_MSL};
  for (size_t i = 0; i < sizeof kOrder / sizeof kOrder[0]; ++i)
    if (rk__cg_target_reserves(kOrder[i], name))
      return rk_target_name(kOrder[i]);
  return NULL;
}

/* ---- Spelling user names ---------------------------------------------------
 */

void rk__cg_put_name(rk__strbuf_t *out, rk_target_t target, const char *name) {
  if (rk__cg_target_reserves(target, name))
    rk__strbuf_puts(out, CG_RENAME_PREFIX);
  rk__strbuf_puts(out, name);
}

const char *rk__cg_spelled_name(cg_ctx_t *ctx, rk_target_t target,
                                const char *name) {
  const size_t k = sizeof CG_RENAME_PREFIX - 1;
  bool r = rk__cg_target_reserves(target, name);
  size_t n = strlen(name);
  char *s = rk__cg_alloc(ctx, n + k + 1);
  memcpy(s, CG_RENAME_PREFIX, r ? k : 0);
  memcpy(s + (r ? k : 0), name, n + 1);
  return s;
}
