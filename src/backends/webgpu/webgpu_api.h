/* The part of webgpu.h that rk uses, declared here so that no WebGPU SDK is
 * needed at build time, plus the run-time symbol table.
 *
 * The layouts follow the webgpu.h shipped with wgpu-native 29 (the
 * "WGPUStringView and callback-info" generation of the header: strings are
 * (data, length) views, asynchronous calls take a *CallbackInfo struct and
 * return a WGPUFuture). The sizes and offsets rk depends on are pinned by
 * _Static_asserts below (LP64), and the loader checks wgpuGetVersion() where
 * the library has it (webgpu_loader.c).
 *
 *   const rk__wgpu_procs_t *p;
 *   if (rk__wgpu_load(&p) != RK_OK) ... // rk_last_error() lists the paths
 *   WGPUInstance inst = p->wgpuCreateInstance(NULL);
 */
#ifndef RK_BACKENDS_WEBGPU_WEBGPU_API_H_
#define RK_BACKENDS_WEBGPU_WEBGPU_API_H_

#include <stddef.h>
#include <stdint.h>

#include "rk/status.h"

/* ---- Basic types -------------------------------------------------------- */

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;
typedef WGPUFlags WGPUBufferUsage;
typedef WGPUFlags WGPUMapMode;
typedef WGPUFlags WGPUShaderStage;
typedef WGPUFlags WGPUInstanceBackend;
typedef uint64_t WGPUSubmissionIndex;

#define RK_WGPU_HANDLE(name) typedef struct name##Impl *name
RK_WGPU_HANDLE(WGPUAdapter);
RK_WGPU_HANDLE(WGPUBindGroup);
RK_WGPU_HANDLE(WGPUBindGroupLayout);
RK_WGPU_HANDLE(WGPUBuffer);
RK_WGPU_HANDLE(WGPUCommandBuffer);
RK_WGPU_HANDLE(WGPUCommandEncoder);
RK_WGPU_HANDLE(WGPUComputePassEncoder);
RK_WGPU_HANDLE(WGPUComputePipeline);
RK_WGPU_HANDLE(WGPUDevice);
RK_WGPU_HANDLE(WGPUInstance);
RK_WGPU_HANDLE(WGPUPipelineLayout);
RK_WGPU_HANDLE(WGPUQueue);
RK_WGPU_HANDLE(WGPUShaderModule);
RK_WGPU_HANDLE(WGPUSampler);
RK_WGPU_HANDLE(WGPUTextureView);
RK_WGPU_HANDLE(WGPUSurface);
RK_WGPU_HANDLE(WGPUQuerySet);
#undef RK_WGPU_HANDLE

#define RK_WGPU_STRLEN SIZE_MAX
#define RK_WGPU_WHOLE_SIZE UINT64_MAX

typedef struct WGPUStringView {
  const char *data;
  size_t length; /* RK_WGPU_STRLEN: NUL-terminated */
} WGPUStringView;

typedef struct WGPUChainedStruct {
  struct WGPUChainedStruct *next;
  uint32_t sType;
} WGPUChainedStruct;

typedef struct WGPUFuture {
  uint64_t id;
} WGPUFuture;

/* ---- Enumerations (the values rk uses) ---------------------------------- */

enum {
  RK_WGPU_STYPE_SHADER_SOURCE_WGSL = 0x00000002,
  RK_WGPU_CALLBACK_MODE_ALLOW_PROCESS_EVENTS = 0x00000002,
  RK_WGPU_CALLBACK_MODE_ALLOW_SPONTANEOUS = 0x00000003,
  RK_WGPU_STATUS_SUCCESS = 0x00000001,
  RK_WGPU_REQUEST_SUCCESS = 0x00000001, /* adapter, device, map, work done */
  RK_WGPU_ADAPTER_TYPE_DISCRETE = 0x00000001,
  RK_WGPU_ADAPTER_TYPE_INTEGRATED = 0x00000002,
  RK_WGPU_ADAPTER_TYPE_CPU = 0x00000003,
  RK_WGPU_ERROR_NONE = 0x00000001,
  RK_WGPU_ERROR_VALIDATION = 0x00000002,
  RK_WGPU_ERROR_OUT_OF_MEMORY = 0x00000003,
  RK_WGPU_ERROR_INTERNAL = 0x00000004,
  RK_WGPU_ERROR_FILTER_VALIDATION = 0x00000001,
  RK_WGPU_ERROR_FILTER_OUT_OF_MEMORY = 0x00000002,
  RK_WGPU_ERROR_FILTER_INTERNAL = 0x00000003,
  RK_WGPU_LOST_DESTROYED = 0x00000002,
  RK_WGPU_LOST_CALLBACK_CANCELLED = 0x00000003,
  RK_WGPU_BINDING_STORAGE = 0x00000003,
  RK_WGPU_BINDING_READ_ONLY_STORAGE = 0x00000004,
  RK_WGPU_FEATURE_LEVEL_CORE = 0x00000002,
  RK_WGPU_LOG_OFF = 0x00000000,
};

#define RK_WGPU_USAGE_MAP_READ ((WGPUBufferUsage)0x1)
#define RK_WGPU_USAGE_COPY_SRC ((WGPUBufferUsage)0x4)
#define RK_WGPU_USAGE_COPY_DST ((WGPUBufferUsage)0x8)
#define RK_WGPU_USAGE_STORAGE ((WGPUBufferUsage)0x80)
#define RK_WGPU_MAP_READ ((WGPUMapMode)0x1)
#define RK_WGPU_STAGE_COMPUTE ((WGPUShaderStage)0x4)
/* wgpu-native's instance backends: Vulkan | Metal | DX12 | browser. */
#define RK_WGPU_BACKENDS_PRIMARY ((WGPUInstanceBackend)0x2D)

/* ---- Callbacks ---------------------------------------------------------- */

typedef void (*WGPURequestAdapterCallback)(uint32_t status, WGPUAdapter adapter,
                                           WGPUStringView message, void *u1,
                                           void *u2);
typedef void (*WGPURequestDeviceCallback)(uint32_t status, WGPUDevice device,
                                          WGPUStringView message, void *u1,
                                          void *u2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice *device,
                                       uint32_t reason, WGPUStringView message,
                                       void *u1, void *u2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice *device,
                                            uint32_t type,
                                            WGPUStringView message, void *u1,
                                            void *u2);
typedef void (*WGPUPopErrorScopeCallback)(uint32_t status, uint32_t type,
                                          WGPUStringView message, void *u1,
                                          void *u2);
typedef void (*WGPUBufferMapCallback)(uint32_t status, WGPUStringView message,
                                      void *u1, void *u2);
typedef void (*WGPUQueueWorkDoneCallback)(uint32_t status,
                                          WGPUStringView message, void *u1,
                                          void *u2);

/* Every *CallbackInfo with a mode has this shape. */
#define RK_WGPU_CALLBACK_INFO(name, fn_t) \
  typedef struct name {                   \
    WGPUChainedStruct *nextInChain;       \
    uint32_t mode;                        \
    fn_t callback;                        \
    void *userdata1;                      \
    void *userdata2;                      \
  } name
RK_WGPU_CALLBACK_INFO(WGPURequestAdapterCallbackInfo,
                      WGPURequestAdapterCallback);
RK_WGPU_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback);
RK_WGPU_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback);
RK_WGPU_CALLBACK_INFO(WGPUPopErrorScopeCallbackInfo, WGPUPopErrorScopeCallback);
RK_WGPU_CALLBACK_INFO(WGPUBufferMapCallbackInfo, WGPUBufferMapCallback);
RK_WGPU_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback);
#undef RK_WGPU_CALLBACK_INFO

typedef struct WGPUUncapturedErrorCallbackInfo {
  WGPUChainedStruct *nextInChain;
  WGPUUncapturedErrorCallback callback;
  void *userdata1;
  void *userdata2;
} WGPUUncapturedErrorCallbackInfo;

/* ---- Descriptors -------------------------------------------------------- */

typedef struct WGPUInstanceDescriptor {
  WGPUChainedStruct *nextInChain;
  size_t requiredFeatureCount;
  const uint32_t *requiredFeatures;
  const void *requiredLimits;
} WGPUInstanceDescriptor;

/* wgpu-native's instance options (wgpu.h), chained to the descriptor:
 * rk sets only `backends`; the rest stays zero (the defaults). */
#define RK_WGPU_STYPE_INSTANCE_EXTRAS 0x00030004u
typedef struct WGPUInstanceExtras {
  WGPUChainedStruct chain;
  WGPUInstanceBackend backends;
  WGPUFlags flags;
  unsigned char defaults[80]; /* compiler, GL and D3D options, zero */
} WGPUInstanceExtras;

typedef struct WGPURequestAdapterOptions {
  WGPUChainedStruct *nextInChain;
  uint32_t featureLevel;
  uint32_t powerPreference;
  WGPUBool forceFallbackAdapter;
  uint32_t backendType;
  WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

/* wgpu-native's wgpuInstanceEnumerateAdapters options (wgpu.h). */
typedef struct WGPUInstanceEnumerateAdapterOptions {
  const WGPUChainedStruct *nextInChain;
  WGPUInstanceBackend backends;
} WGPUInstanceEnumerateAdapterOptions;

typedef struct WGPUAdapterInfo {
  WGPUChainedStruct *nextInChain;
  WGPUStringView vendor;
  WGPUStringView architecture;
  WGPUStringView device;
  WGPUStringView description;
  uint32_t backendType;
  uint32_t adapterType;
  uint32_t vendorID;
  uint32_t deviceID;
  uint32_t subgroupMinSize;
  uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

typedef struct WGPULimits {
  WGPUChainedStruct *nextInChain;
  uint32_t maxTextureDimension1D;
  uint32_t maxTextureDimension2D;
  uint32_t maxTextureDimension3D;
  uint32_t maxTextureArrayLayers;
  uint32_t maxBindGroups;
  uint32_t maxBindGroupsPlusVertexBuffers;
  uint32_t maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout;
  uint32_t maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage;
  uint32_t maxSamplersPerShaderStage;
  uint32_t maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage;
  uint32_t maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize;
  uint64_t maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment;
  uint32_t minStorageBufferOffsetAlignment;
  uint32_t maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes;
  uint32_t maxVertexBufferArrayStride;
  uint32_t maxInterStageShaderVariables;
  uint32_t maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample;
  uint32_t maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX;
  uint32_t maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension;
  uint32_t maxImmediateSize;
} WGPULimits;

typedef struct WGPUQueueDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  const uint32_t *requiredFeatures;
  const WGPULimits *requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUBufferDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUBufferUsage usage;
  uint64_t size;
  WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct WGPUShaderModuleDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct WGPUConstantEntry {
  WGPUChainedStruct *nextInChain;
  WGPUStringView key;
  double value;
} WGPUConstantEntry;

typedef struct WGPUComputeState {
  WGPUChainedStruct *nextInChain;
  WGPUShaderModule module;
  WGPUStringView entryPoint;
  size_t constantCount;
  const WGPUConstantEntry *constants;
} WGPUComputeState;

typedef struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUPipelineLayout layout;
  WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct WGPUBufferBindingLayout {
  WGPUChainedStruct *nextInChain;
  uint32_t type;
  WGPUBool hasDynamicOffset;
  uint64_t minBindingSize;
} WGPUBufferBindingLayout;

/* Sampler, texture and storage-texture layouts: rk binds buffers only and
 * leaves these zero ("binding not used"). */
typedef struct RkWgpuUnusedLayout2 {
  WGPUChainedStruct *nextInChain;
  uint32_t a;
} RkWgpuUnusedLayout2;
typedef struct RkWgpuUnusedLayout4 {
  WGPUChainedStruct *nextInChain;
  uint32_t a, b, c;
} RkWgpuUnusedLayout4;

typedef struct WGPUBindGroupLayoutEntry {
  WGPUChainedStruct *nextInChain;
  uint32_t binding;
  WGPUShaderStage visibility;
  uint32_t bindingArraySize;
  WGPUBufferBindingLayout buffer;
  RkWgpuUnusedLayout2 sampler;
  RkWgpuUnusedLayout4 texture;
  RkWgpuUnusedLayout4 storageTexture;
} WGPUBindGroupLayoutEntry;

typedef struct WGPUBindGroupLayoutDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  size_t entryCount;
  const WGPUBindGroupLayoutEntry *entries;
} WGPUBindGroupLayoutDescriptor;

typedef struct WGPUPipelineLayoutDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  size_t bindGroupLayoutCount;
  const WGPUBindGroupLayout *bindGroupLayouts;
  uint32_t immediateSize;
} WGPUPipelineLayoutDescriptor;

typedef struct WGPUBindGroupEntry {
  WGPUChainedStruct *nextInChain;
  uint32_t binding;
  WGPUBuffer buffer;
  uint64_t offset;
  uint64_t size;
  WGPUSampler sampler;
  WGPUTextureView textureView;
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUBindGroupLayout layout;
  size_t entryCount;
  const WGPUBindGroupEntry *entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
} WGPUCommandEncoderDescriptor;

typedef struct WGPUComputePassDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  const void *timestampWrites;
} WGPUComputePassDescriptor;

typedef struct WGPUCommandBufferDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
} WGPUCommandBufferDescriptor;

/* Pinned layouts (x86-64 / AArch64 LP64): a mismatch with the library's
 * header would corrupt every call, so the build refuses it. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(WGPUStringView) == 16, "WGPUStringView");
_Static_assert(sizeof(WGPULimits) == 152, "WGPULimits");
_Static_assert(offsetof(WGPULimits, minStorageBufferOffsetAlignment) == 84,
               "WGPULimits.minStorageBufferOffsetAlignment");
_Static_assert(offsetof(WGPULimits, maxBufferSize) == 96,
               "WGPULimits.maxBufferSize");
_Static_assert(offsetof(WGPULimits, maxComputeWorkgroupStorageSize) == 124,
               "WGPULimits.maxComputeWorkgroupStorageSize");
_Static_assert(offsetof(WGPULimits, maxImmediateSize) == 148,
               "WGPULimits.maxImmediateSize");
_Static_assert(sizeof(WGPUAdapterInfo) == 96, "WGPUAdapterInfo");
_Static_assert(offsetof(WGPUAdapterInfo, backendType) == 72,
               "WGPUAdapterInfo.backendType");
_Static_assert(sizeof(WGPUDeviceDescriptor) == 144, "WGPUDeviceDescriptor");
_Static_assert(offsetof(WGPUDeviceDescriptor, deviceLostCallbackInfo) == 72,
               "WGPUDeviceDescriptor.deviceLostCallbackInfo");
_Static_assert(offsetof(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo) ==
                   112,
               "WGPUDeviceDescriptor.uncapturedErrorCallbackInfo");
_Static_assert(sizeof(WGPUBindGroupLayoutEntry) == 120,
               "WGPUBindGroupLayoutEntry");
_Static_assert(offsetof(WGPUBindGroupLayoutEntry, buffer) == 32,
               "WGPUBindGroupLayoutEntry.buffer");
_Static_assert(offsetof(WGPUBindGroupLayoutEntry, storageTexture) == 96,
               "WGPUBindGroupLayoutEntry.storageTexture");
_Static_assert(sizeof(WGPUBindGroupEntry) == 56, "WGPUBindGroupEntry");
_Static_assert(sizeof(WGPUComputePipelineDescriptor) == 80,
               "WGPUComputePipelineDescriptor");
_Static_assert(offsetof(WGPUComputePipelineDescriptor, compute) == 32,
               "WGPUComputePipelineDescriptor.compute");
_Static_assert(sizeof(WGPUComputeState) == 48, "WGPUComputeState");
_Static_assert(sizeof(WGPUConstantEntry) == 32, "WGPUConstantEntry");
_Static_assert(sizeof(WGPUBufferDescriptor) == 48, "WGPUBufferDescriptor");
_Static_assert(sizeof(WGPUBufferMapCallbackInfo) == 40,
               "WGPUBufferMapCallbackInfo");
_Static_assert(sizeof(WGPUUncapturedErrorCallbackInfo) == 32,
               "WGPUUncapturedErrorCallbackInfo");
_Static_assert(sizeof(WGPURequestAdapterOptions) == 32,
               "WGPURequestAdapterOptions");
_Static_assert(sizeof(WGPUPipelineLayoutDescriptor) == 48,
               "WGPUPipelineLayoutDescriptor");
_Static_assert(sizeof(WGPUInstanceDescriptor) == 32, "WGPUInstanceDescriptor");
_Static_assert(sizeof(WGPUShaderSourceWGSL) == 32, "WGPUShaderSourceWGSL");
_Static_assert(sizeof(WGPUInstanceExtras) == 112, "WGPUInstanceExtras");
_Static_assert(offsetof(WGPUInstanceExtras, backends) == 16,
               "WGPUInstanceExtras.backends");
#endif

/* ---- Symbol table ------------------------------------------------------- */

/* RK_WGPU_REQUIRED(name, return type, (parameters)): the backend cannot work
 * without it. RK_WGPU_OPTIONAL: used when present (wgpu-native extensions,
 * or calls a backend can do without). */
#define RK_WGPU_SYMBOLS(REQ, OPT)                                            \
  REQ(wgpuCreateInstance, WGPUInstance, (const WGPUInstanceDescriptor *))    \
  REQ(wgpuInstanceRequestAdapter, WGPUFuture,                                \
      (WGPUInstance, const WGPURequestAdapterOptions *,                      \
       WGPURequestAdapterCallbackInfo))                                      \
  REQ(wgpuInstanceProcessEvents, void, (WGPUInstance))                       \
  REQ(wgpuInstanceRelease, void, (WGPUInstance))                             \
  REQ(wgpuAdapterGetInfo, uint32_t, (WGPUAdapter, WGPUAdapterInfo *))        \
  REQ(wgpuAdapterInfoFreeMembers, void, (WGPUAdapterInfo))                   \
  REQ(wgpuAdapterGetLimits, uint32_t, (WGPUAdapter, WGPULimits *))           \
  REQ(wgpuAdapterRequestDevice, WGPUFuture,                                  \
      (WGPUAdapter, const WGPUDeviceDescriptor *,                            \
       WGPURequestDeviceCallbackInfo))                                       \
  REQ(wgpuAdapterRelease, void, (WGPUAdapter))                               \
  REQ(wgpuDeviceGetQueue, WGPUQueue, (WGPUDevice))                           \
  REQ(wgpuDeviceCreateBuffer, WGPUBuffer,                                    \
      (WGPUDevice, const WGPUBufferDescriptor *))                            \
  REQ(wgpuDeviceCreateShaderModule, WGPUShaderModule,                        \
      (WGPUDevice, const WGPUShaderModuleDescriptor *))                      \
  REQ(wgpuDeviceCreateComputePipeline, WGPUComputePipeline,                  \
      (WGPUDevice, const WGPUComputePipelineDescriptor *))                   \
  REQ(wgpuDeviceCreateBindGroupLayout, WGPUBindGroupLayout,                  \
      (WGPUDevice, const WGPUBindGroupLayoutDescriptor *))                   \
  REQ(wgpuDeviceCreatePipelineLayout, WGPUPipelineLayout,                    \
      (WGPUDevice, const WGPUPipelineLayoutDescriptor *))                    \
  REQ(wgpuDeviceCreateBindGroup, WGPUBindGroup,                              \
      (WGPUDevice, const WGPUBindGroupDescriptor *))                         \
  REQ(wgpuDeviceCreateCommandEncoder, WGPUCommandEncoder,                    \
      (WGPUDevice, const WGPUCommandEncoderDescriptor *))                    \
  REQ(wgpuDevicePushErrorScope, void, (WGPUDevice, uint32_t))                \
  REQ(wgpuDevicePopErrorScope, WGPUFuture,                                   \
      (WGPUDevice, WGPUPopErrorScopeCallbackInfo))                           \
  REQ(wgpuDeviceRelease, void, (WGPUDevice))                                 \
  REQ(wgpuBufferRelease, void, (WGPUBuffer))                                 \
  REQ(wgpuBufferMapAsync, WGPUFuture,                                        \
      (WGPUBuffer, WGPUMapMode, size_t, size_t, WGPUBufferMapCallbackInfo))  \
  REQ(wgpuBufferGetConstMappedRange, const void *,                           \
      (WGPUBuffer, size_t, size_t))                                          \
  REQ(wgpuBufferUnmap, void, (WGPUBuffer))                                   \
  REQ(wgpuShaderModuleRelease, void, (WGPUShaderModule))                     \
  REQ(wgpuComputePipelineRelease, void, (WGPUComputePipeline))               \
  REQ(wgpuBindGroupLayoutRelease, void, (WGPUBindGroupLayout))               \
  REQ(wgpuPipelineLayoutRelease, void, (WGPUPipelineLayout))                 \
  REQ(wgpuBindGroupRelease, void, (WGPUBindGroup))                           \
  REQ(wgpuCommandEncoderBeginComputePass, WGPUComputePassEncoder,            \
      (WGPUCommandEncoder, const WGPUComputePassDescriptor *))               \
  REQ(wgpuCommandEncoderCopyBufferToBuffer, void,                            \
      (WGPUCommandEncoder, WGPUBuffer, uint64_t, WGPUBuffer, uint64_t,       \
       uint64_t))                                                            \
  REQ(wgpuCommandEncoderFinish, WGPUCommandBuffer,                           \
      (WGPUCommandEncoder, const WGPUCommandBufferDescriptor *))             \
  REQ(wgpuCommandEncoderRelease, void, (WGPUCommandEncoder))                 \
  REQ(wgpuComputePassEncoderSetPipeline, void,                               \
      (WGPUComputePassEncoder, WGPUComputePipeline))                         \
  REQ(wgpuComputePassEncoderSetBindGroup, void,                              \
      (WGPUComputePassEncoder, uint32_t, WGPUBindGroup, size_t,              \
       const uint32_t *))                                                    \
  REQ(wgpuComputePassEncoderDispatchWorkgroups, void,                        \
      (WGPUComputePassEncoder, uint32_t, uint32_t, uint32_t))                \
  REQ(wgpuComputePassEncoderEnd, void, (WGPUComputePassEncoder))             \
  REQ(wgpuComputePassEncoderRelease, void, (WGPUComputePassEncoder))         \
  REQ(wgpuCommandBufferRelease, void, (WGPUCommandBuffer))                   \
  REQ(wgpuQueueSubmit, void, (WGPUQueue, size_t, const WGPUCommandBuffer *)) \
  REQ(wgpuQueueWriteBuffer, void,                                            \
      (WGPUQueue, WGPUBuffer, uint64_t, const void *, size_t))               \
  REQ(wgpuQueueOnSubmittedWorkDone, WGPUFuture,                              \
      (WGPUQueue, WGPUQueueWorkDoneCallbackInfo))                            \
  REQ(wgpuQueueRelease, void, (WGPUQueue))                                   \
  OPT(wgpuGetVersion, uint32_t, (void))                                      \
  OPT(wgpuSetLogLevel, void, (uint32_t))                                     \
  OPT(wgpuDevicePoll, WGPUBool,                                              \
      (WGPUDevice, WGPUBool, const WGPUSubmissionIndex *))                   \
  OPT(wgpuInstanceEnumerateAdapters, size_t,                                 \
      (WGPUInstance, const WGPUInstanceEnumerateAdapterOptions *,            \
       WGPUAdapter *))

typedef struct rk__wgpu_procs {
  void *dl;
  char path[1024];  /* the library that was loaded */
  uint32_t version; /* wgpuGetVersion(), 0 when the library has none */
#define RK_WGPU_FIELD_(name, ret, params) ret(*name) params;
  RK_WGPU_SYMBOLS(RK_WGPU_FIELD_, RK_WGPU_FIELD_)
#undef RK_WGPU_FIELD_
} rk__wgpu_procs_t;

/* Loads a webgpu.h implementation: $RK_WEBGPU_LIB if set (only that one),
 * else wgpu-native in rk's Python environment ($RK_WGPU_VENV, default
 * ~/.local/share/rk/wgpu-venv), else the system's libwgpu_native.so and
 * Dawn's libwebgpu_dawn.so. Entry points come from wgpuGetProcAddress where
 * the library has it, dlsym otherwise. RK_ERR_UNAVAILABLE names every path
 * tried and why it failed, or the missing symbol, or a version mismatch.
 * A loaded library stays loaded (and is reused) for the life of the process;
 * the table returned is shared and read-only. Thread-safe. */
rk_status_t rk__wgpu_load(const rk__wgpu_procs_t **out_procs);

/* The library's one WGPUInstance, created on first use and kept for the
 * life of the process (drivers it loads stay loaded; adapters are cheap to
 * enumerate again). NULL if the implementation cannot create one.
 * Thread-safe. */
WGPUInstance rk__wgpu_instance(const rk__wgpu_procs_t *procs);

/* A string view as a NUL-terminated copy in `buf` (truncated). */
const char *rk__wgpu_str(WGPUStringView s, char *buf, size_t cap);

#endif /* RK_BACKENDS_WEBGPU_WEBGPU_API_H_ */
