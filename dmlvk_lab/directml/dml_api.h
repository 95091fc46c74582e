/* The part of DirectML's public API (DirectML.h, DML_TARGET_VERSION 0x6400) that dml_oracle.c uses,
 * declared for C: mingw-w64 10 and Wine 8 ship no DirectML.h. Interface method order, GUIDs and
 * struct members follow the public header.
 *
 * In C, a COM method that returns a struct (GetBindingProperties, ID3D12DescriptorHeap's
 * Get*DescriptorHandleForHeapStart) takes a hidden pointer to the result right after `This`: the MSVC
 * x64 ABI of C++ member functions, which DirectML.dll and Wine's d3d12 follow. */
#ifndef DMLVK_DML_API_H
#define DMLVK_DML_API_H
#include <d3d12.h>

typedef struct { UINT Type; const void *Desc; } DML_TENSOR_DESC;          /* DML_TENSOR_TYPE_BUFFER = 1 */
typedef struct {
  UINT DataType, Flags, DimensionCount;
  const UINT *Sizes, *Strides;
  UINT64 TotalTensorSizeInBytes;
  UINT GuaranteedBaseOffsetAlignment;
} DML_BUFFER_TENSOR_DESC;
typedef struct { UINT Type; const void *Desc; } DML_OPERATOR_DESC;

/* DEPTH_TO_SPACE / SPACE_TO_DEPTH (68, 69) and their "1" forms (113, 114, with Order) */
typedef struct { const DML_TENSOR_DESC *InputTensor, *OutputTensor; UINT BlockSize; INT Order; } DML_DEPTH_SPACE_DESC;
/* QUANTIZED_LINEAR_CONVOLUTION (120) */
typedef struct {
  const DML_TENSOR_DESC *Tensors[10];   /* Input, InputScale, InputZeroPoint, Filter, FilterScale,
                                           FilterZeroPoint, Bias, OutputScale, OutputZeroPoint, Output */
  UINT DimensionCount;
  const UINT *Strides, *Dilations, *StartPadding, *EndPadding;
  UINT GroupCount;
} DML_QLC_DESC;

/* ELEMENT_WISE_QUANTIZED_LINEAR_ADD (147) */
typedef struct {
  const DML_TENSOR_DESC *Tensors[9];    /* A, AScale, AZeroPoint, B, BScale, BZeroPoint, OutputScale,
                                           OutputZeroPoint, Output */
} DML_QLADD_DESC;

/* JOIN (63) and TILE (70) */
typedef struct { UINT InputCount; const DML_TENSOR_DESC *InputTensors; const DML_TENSOR_DESC *OutputTensor; UINT Axis; }
  DML_JOIN_DESC;
typedef struct { const DML_TENSOR_DESC *InputTensor, *OutputTensor; UINT RepeatsCount; const UINT *Repeats; } DML_TILE_DESC;

/* ACTIVATION_LEAKY_RELU (39) and ACTIVATION_PARAMETERIZED_RELU (42) */
typedef struct { const DML_TENSOR_DESC *InputTensor, *OutputTensor; FLOAT Alpha; } DML_LEAKY_RELU_DESC;
typedef struct { const DML_TENSOR_DESC *InputTensor, *SlopeTensor, *OutputTensor; } DML_PRELU_DESC;

/* RESAMPLE (96), RESAMPLE1 (116), RESAMPLE2 (161), RESAMPLE3 (175) */
typedef struct { const DML_TENSOR_DESC *InputTensor, *OutputTensor; UINT InterpolationMode; UINT ScaleCount;
                 const FLOAT *Scales; } DML_RESAMPLE_DESC;
typedef struct { const DML_TENSOR_DESC *InputTensor, *OutputTensor; UINT InterpolationMode; UINT DimensionCount;
                 const FLOAT *Scales, *InputPixelOffsets, *OutputPixelOffsets; } DML_RESAMPLE1_DESC;
typedef struct { const DML_TENSOR_DESC *InputTensor, *OutputTensor; UINT InterpolationMode; UINT RoundingDirection;
                 UINT DimensionCount; const FLOAT *Scales, *InputPixelOffsets, *OutputPixelOffsets; BOOL Antialiased; }
  DML_RESAMPLE3_DESC;                   /* RESAMPLE2: the same without Antialiased */

/* ELEMENT_WISE_CLIP (8), ELEMENT_WISE_ADD (4), ELEMENT_WISE_MULTIPLY (24) */
typedef struct { FLOAT Scale, Bias; } DML_SCALE_BIAS;
typedef struct { const DML_TENSOR_DESC *InputTensor, *OutputTensor; const DML_SCALE_BIAS *ScaleBias; FLOAT Min, Max; }
  DML_CLIP_DESC;
typedef struct { const DML_TENSOR_DESC *ATensor, *BTensor, *OutputTensor; } DML_BINARY_DESC;

#define DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT 0
#define DML_FEATURE_FEATURE_LEVELS 1
typedef struct { UINT Count; const INT *Levels; } DML_FEATURE_LEVELS_QUERY;

typedef struct { UINT RequiredDescriptorCount; UINT64 TemporaryResourceSize, PersistentResourceSize; } DML_BINDING_PROPERTIES;
#define DML_BINDING_TYPE_NONE 0
#define DML_BINDING_TYPE_BUFFER 1
typedef struct { UINT Type; const void *Desc; } DML_BINDING_DESC;
typedef struct { ID3D12Resource *Buffer; UINT64 Offset, SizeInBytes; } DML_BUFFER_BINDING;

typedef struct IDMLDevice IDMLDevice;
typedef struct IDMLObject IDMLObject;               /* operators, compiled operators, initializers */
typedef struct IDMLBindingTable IDMLBindingTable;
typedef struct IDMLCommandRecorder IDMLCommandRecorder;

typedef struct {
  IDMLObject *Dispatchable;
  D3D12_CPU_DESCRIPTOR_HANDLE CPUDescriptorHandle;
  D3D12_GPU_DESCRIPTOR_HANDLE GPUDescriptorHandle;
  UINT SizeInDescriptors;
} DML_BINDING_TABLE_DESC;

/* IUnknown, then IDMLObject's four private-data/name methods, then IDMLDeviceChild's GetDevice */
#define DMLVK_IUNKNOWN(T) \
  HRESULT (STDMETHODCALLTYPE *QueryInterface)(T *, REFIID, void **); \
  ULONG (STDMETHODCALLTYPE *AddRef)(T *); \
  ULONG (STDMETHODCALLTYPE *Release)(T *);
#define DMLVK_IDMLOBJECT(T) DMLVK_IUNKNOWN(T) \
  void *GetPrivateData, *SetPrivateData, *SetPrivateDataInterface, *SetName;
#define DMLVK_IDMLCHILD(T) DMLVK_IDMLOBJECT(T) void *GetDevice;

typedef struct {
  DMLVK_IDMLOBJECT(IDMLDevice)
  HRESULT (STDMETHODCALLTYPE *CheckFeatureSupport)(IDMLDevice *, UINT feature, UINT query_size, const void *query,
                                                   UINT data_size, void *data);
  HRESULT (STDMETHODCALLTYPE *CreateOperator)(IDMLDevice *, const DML_OPERATOR_DESC *, REFIID, void **);
  HRESULT (STDMETHODCALLTYPE *CompileOperator)(IDMLDevice *, IDMLObject *, UINT flags, REFIID, void **);
  HRESULT (STDMETHODCALLTYPE *CreateOperatorInitializer)(IDMLDevice *, UINT, IDMLObject *const *, REFIID, void **);
  HRESULT (STDMETHODCALLTYPE *CreateCommandRecorder)(IDMLDevice *, REFIID, void **);
  HRESULT (STDMETHODCALLTYPE *CreateBindingTable)(IDMLDevice *, const DML_BINDING_TABLE_DESC *, REFIID, void **);
} IDMLDeviceVtbl;
struct IDMLDevice { const IDMLDeviceVtbl *lpVtbl; };

/* IDMLOperator adds nothing to IDMLDeviceChild; IDMLDispatchable adds GetBindingProperties. */
typedef struct {
  DMLVK_IDMLCHILD(IDMLObject)
  DML_BINDING_PROPERTIES *(STDMETHODCALLTYPE *GetBindingProperties)(IDMLObject *, DML_BINDING_PROPERTIES *ret);
} IDMLObjectVtbl;
struct IDMLObject { const IDMLObjectVtbl *lpVtbl; };

typedef struct {
  DMLVK_IDMLCHILD(IDMLBindingTable)
  void (STDMETHODCALLTYPE *BindInputs)(IDMLBindingTable *, UINT, const DML_BINDING_DESC *);
  void (STDMETHODCALLTYPE *BindOutputs)(IDMLBindingTable *, UINT, const DML_BINDING_DESC *);
  void (STDMETHODCALLTYPE *BindTemporaryResource)(IDMLBindingTable *, const DML_BINDING_DESC *);
  void (STDMETHODCALLTYPE *BindPersistentResource)(IDMLBindingTable *, const DML_BINDING_DESC *);
  HRESULT (STDMETHODCALLTYPE *Reset)(IDMLBindingTable *, const DML_BINDING_TABLE_DESC *);
} IDMLBindingTableVtbl;
struct IDMLBindingTable { const IDMLBindingTableVtbl *lpVtbl; };

typedef struct {
  DMLVK_IDMLCHILD(IDMLCommandRecorder)
  void (STDMETHODCALLTYPE *RecordDispatch)(IDMLCommandRecorder *, ID3D12CommandList *, IDMLObject *, IDMLBindingTable *);
} IDMLCommandRecorderVtbl;
struct IDMLCommandRecorder { const IDMLCommandRecorderVtbl *lpVtbl; };

static const GUID IID_IDMLDevice_ = {0x6dbd6437, 0x96fd, 0x423f, {0xa9, 0x8c, 0xae, 0x5e, 0x7c, 0x2a, 0x57, 0x3f}};
static const GUID IID_IDMLOperator_ = {0x26caae7a, 0x3081, 0x4633, {0x95, 0x81, 0x22, 0x6f, 0xbe, 0x57, 0x69, 0x5d}};
static const GUID IID_IDMLCompiledOperator_ = {0x6b15e56a, 0xbf5c, 0x4902, {0x92, 0xd8, 0xda, 0x3a, 0x65, 0x0a, 0xfe, 0xa4}};
static const GUID IID_IDMLOperatorInitializer_ = {0x427c1113, 0x435c, 0x469c, {0x86, 0x76, 0x4d, 0x5d, 0xd0, 0x72, 0xf8, 0x13}};
static const GUID IID_IDMLBindingTable_ = {0x29c687dc, 0xde74, 0x4e3b, {0xab, 0x00, 0x11, 0x68, 0xf2, 0xfc, 0x3c, 0xfc}};
static const GUID IID_IDMLCommandRecorder_ = {0xe6857a76, 0x2e3e, 0x4fdd, {0xbf, 0xf4, 0x5d, 0x2b, 0xa1, 0x0f, 0xb4, 0x53}};

typedef HRESULT (WINAPI *PFN_DMLCreateDevice1)(ID3D12Device *, UINT flags, INT min_feature_level, REFIID, void **);
#endif
