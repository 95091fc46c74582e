/* dml_oracle: runs a batch of operator descriptions through the real DirectML.dll and writes what it
 * answered. Built with mingw-w64, run under Wine (its d3d12 is vkd3d) by dmlvk_lab/directml/oracle.py.
 *
 *   dml_oracle.exe CASES RESULTS
 *
 * CASES (little-endian, written by oracle.py):
 *   "DMLC" u32 version(1) u32 count, then per case:
 *   u32 operator (4, 8, 24, 39, 42, 63, 68, 69, 70, 96, 113, 114, 116, 120, 147, 161, 175), u32 execute (1: run it if DirectML accepts it),
 *   depth/space: tensor Input, tensor Output, u32 BlockSize, i32 Order;
 *   QLC: 10 tensors (DirectML's order), u32 DimensionCount, DimensionCount u32 each of Strides,
 *        Dilations, StartPadding, EndPadding, u32 GroupCount;
 *   quantized add: 9 tensors (DirectML's order);
 *   JOIN: u32 InputCount (at most 9), the inputs, the output, u32 Axis;
 *   TILE: tensor Input, tensor Output, u32 RepeatsCount, RepeatsCount u32;
 *   LEAKY_RELU: tensor Input, tensor Output, f32 Alpha; PARAMETERIZED_RELU: Input, Slope, Output;
 *   ELEMENT_WISE_ADD, MULTIPLY: tensors A, B, Output; ELEMENT_WISE_CLIP: tensor Input, tensor Output,
 *        u32 has_scale_bias, f32 Scale, f32 Bias, f32 Min, f32 Max;
 *   RESAMPLE, 1, 2, 3: tensor Input, tensor Output, u32 InterpolationMode, u32 RoundingDirection,
 *        u32 Antialiased, u32 DimensionCount (ScaleCount), then DimensionCount f32 each of Scales,
 *        InputPixelOffsets and OutputPixelOffsets (RESAMPLE uses only the first two members and
 *        Scales, RESAMPLE1 not the rounding, RESAMPLE2 not Antialiased);
 *   tensor: u32 kind (0 null, 1 buffer, 2 a desc of Type INVALID), and for 1 and 2: u32 DataType,
 *        u32 Flags, u32 DimensionCount, Sizes, u32 has_strides, Strides (if any), u64 TotalTensorSizeInBytes,
 *        u32 GuaranteedBaseOffsetAlignment;
 *   if execute: for every tensor present, u64 n and n bytes (inputs' contents, then the output
 *        buffer's initial bytes, gaps included).
 * RESULTS: "DMLR" u32 version(1) i32 DMLCreateDevice1's HRESULT, u32 max feature level,
 *   u32 a bit per DML_TENSOR_DATA_TYPE that CheckFeatureSupport calls supported, then per case
 *   (flushed as each ends, so a crash loses only the case that crashed):
 *   i32 CreateOperator's HRESULT, i32 execution's HRESULT (0 when not executed), u64 n, n bytes of
 *   the output buffer after execution.
 * Exit status 6: an execution failed (its result is written; vkd3d's device may be lost, so the
 * rest of the batch runs in a new process); 7: the device was found lost before a case (not written). Objects are released after each case; the shader-visible descriptor heap is kept and reused
 * (vkd3d's heaps cost about 1.5 GB each on lavapipe). */
#define COBJMACROS
#define INITGUID
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <d3d12.h>
#include "dml_api.h"

#define MAX_RANK 16
#define MAX_DIMS 16
#define FAIL(hr) do { HRESULT hr_ = (hr); if (FAILED(hr_)) return hr_; } while (0)

static ID3D12Device *dev;
static ID3D12CommandQueue *queue;
static ID3D12CommandAllocator *allocator;
static ID3D12GraphicsCommandList *list;
static ID3D12Fence *fence;
static UINT64 fence_value;
static HANDLE fence_event;
static IDMLDevice *dml;
static ID3D12DescriptorHeap *heap;
static UINT heap_size;

/* ---- reading the batch ---- */
static FILE *in;
static void die(const char *why) { fprintf(stderr, "dml_oracle: %s\n", why); exit(2); }
static void get(void *p, size_t n) { if (n && fread(p, 1, n, in) != n) die("truncated case file"); }
static UINT u32(void) { UINT v; get(&v, 4); return v; }
static UINT64 u64(void) { UINT64 v; get(&v, 8); return v; }

typedef struct {
  int kind;
  UINT sizes[MAX_RANK], strides[MAX_RANK];
  DML_BUFFER_TENSOR_DESC buffer;
  DML_TENSOR_DESC desc;
  unsigned char *data;
  UINT64 data_bytes;
} Tensor;

static const DML_TENSOR_DESC *read_tensor(Tensor *t) {
  memset(t, 0, sizeof *t);
  t->kind = (int)u32();
  if (!t->kind) return NULL;
  t->buffer.DataType = u32();
  t->buffer.Flags = u32();
  t->buffer.DimensionCount = u32();
  if (t->buffer.DimensionCount > MAX_RANK) die("rank too large");
  for (UINT i = 0; i < t->buffer.DimensionCount; i++) t->sizes[i] = u32();
  t->buffer.Sizes = t->sizes;
  if (u32()) {
    for (UINT i = 0; i < t->buffer.DimensionCount; i++) t->strides[i] = u32();
    t->buffer.Strides = t->strides;
  }
  t->buffer.TotalTensorSizeInBytes = u64();
  t->buffer.GuaranteedBaseOffsetAlignment = u32();
  t->desc.Type = t->kind == 1 ? 1 : 0;
  t->desc.Desc = &t->buffer;
  return &t->desc;
}

/* ---- D3D12 helpers ---- */
static HRESULT buffer(D3D12_HEAP_TYPE type, UINT64 size, D3D12_RESOURCE_STATES state, ID3D12Resource **out) {
  D3D12_HEAP_PROPERTIES hp = {0};
  D3D12_RESOURCE_DESC rd = {0};
  hp.Type = type;
  rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
  rd.Width = size < 256 ? 256 : (size + 255) & ~(UINT64)255;
  rd.Height = rd.DepthOrArraySize = rd.MipLevels = 1;
  rd.SampleDesc.Count = 1;
  rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
  rd.Flags = type == D3D12_HEAP_TYPE_DEFAULT ? D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS : D3D12_RESOURCE_FLAG_NONE;
  return ID3D12Device_CreateCommittedResource(dev, &hp, D3D12_HEAP_FLAG_NONE, &rd, state, NULL,
                                              &IID_ID3D12Resource, (void **)out);
}

static void transition(ID3D12Resource *r, D3D12_RESOURCE_STATES from, D3D12_RESOURCE_STATES to) {
  D3D12_RESOURCE_BARRIER b = {0};
  b.Type = D3D12_RESOURCE_BARRIER_TYPE_TRANSITION;
  b.Transition.pResource = r;
  b.Transition.Subresource = D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES;
  b.Transition.StateBefore = from;
  b.Transition.StateAfter = to;
  ID3D12GraphicsCommandList_ResourceBarrier(list, 1, &b);
}

static void uav_barrier(void) {
  D3D12_RESOURCE_BARRIER b = {0};
  b.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;
  ID3D12GraphicsCommandList_ResourceBarrier(list, 1, &b);
}

static HRESULT submit(void) {
  ID3D12CommandList *l = (ID3D12CommandList *)list;
  FAIL(ID3D12GraphicsCommandList_Close(list));
  ID3D12CommandQueue_ExecuteCommandLists(queue, 1, &l);
  FAIL(ID3D12CommandQueue_Signal(queue, fence, ++fence_value));
  if (ID3D12Fence_GetCompletedValue(fence) < fence_value) {
    ID3D12Fence_SetEventOnCompletion(fence, fence_value, fence_event);
    if (WaitForSingleObject(fence_event, 120000) != WAIT_OBJECT_0) return E_FAIL;
  }
  FAIL(ID3D12Device_GetDeviceRemovedReason(dev));
  FAIL(ID3D12CommandAllocator_Reset(allocator));
  return ID3D12GraphicsCommandList_Reset(list, allocator, NULL);
}

static HRESULT ensure_heap(UINT n) {
  D3D12_DESCRIPTOR_HEAP_DESC hd = {0};
  if (heap && heap_size >= n) return S_OK;
  if (heap) ID3D12DescriptorHeap_Release(heap);
  heap = NULL;
  heap_size = n < 64 ? 64 : n;
  hd.Type = D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV;
  hd.NumDescriptors = heap_size;
  hd.Flags = D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE;
  return ID3D12Device_CreateDescriptorHeap(dev, &hd, &IID_ID3D12DescriptorHeap, (void **)&heap);
}

/* ---- one execution: compile, initialize, bind, dispatch, read the output buffer back ---- */
typedef struct {
  IDMLObject *compiled, *init;
  IDMLBindingTable *table;
  IDMLCommandRecorder *recorder;
  ID3D12Resource *res[10], *upload[10], *temp, *persistent, *readback;
} Run;

static void release_run(Run *r) {
  for (int i = 0; i < 10; i++) {
    if (r->res[i]) ID3D12Resource_Release(r->res[i]);
    if (r->upload[i]) ID3D12Resource_Release(r->upload[i]);
  }
  if (r->temp) ID3D12Resource_Release(r->temp);
  if (r->persistent) ID3D12Resource_Release(r->persistent);
  if (r->readback) ID3D12Resource_Release(r->readback);
  if (r->table) r->table->lpVtbl->Release(r->table);
  if (r->recorder) r->recorder->lpVtbl->Release(r->recorder);
  if (r->init) r->init->lpVtbl->Release(r->init);
  if (r->compiled) r->compiled->lpVtbl->Release(r->compiled);
}

/* tensors[0..n-1]: the operator's tensors in binding order, the last one the output */
static HRESULT execute(Run *r, IDMLObject *op, Tensor *tensors, int n, unsigned char **out, UINT64 *out_bytes) {
  DML_BINDING_PROPERTIES pi, pe;
  DML_BINDING_TABLE_DESC td;
  DML_BUFFER_BINDING bb[10], tb, pb;
  DML_BINDING_DESC bd[10], tbd = {DML_BINDING_TYPE_BUFFER, &tb}, pbd = {DML_BINDING_TYPE_BUFFER, &pb};
  ID3D12DescriptorHeap *heaps[1];
  UINT64 temp_bytes;
  Tensor *o = &tensors[n - 1];
  void *p;
  D3D12_RANGE none = {0, 0}, all;

  FAIL(dml->lpVtbl->CompileOperator(dml, op, 0, &IID_IDMLCompiledOperator_, (void **)&r->compiled));
  FAIL(dml->lpVtbl->CreateOperatorInitializer(dml, 1, &r->compiled, &IID_IDMLOperatorInitializer_, (void **)&r->init));
  r->init->lpVtbl->GetBindingProperties(r->init, &pi);
  r->compiled->lpVtbl->GetBindingProperties(r->compiled, &pe);
  FAIL(ensure_heap(pi.RequiredDescriptorCount > pe.RequiredDescriptorCount ? pi.RequiredDescriptorCount
                                                                           : pe.RequiredDescriptorCount));
  temp_bytes = pi.TemporaryResourceSize > pe.TemporaryResourceSize ? pi.TemporaryResourceSize : pe.TemporaryResourceSize;
  if (temp_bytes) FAIL(buffer(D3D12_HEAP_TYPE_DEFAULT, temp_bytes, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, &r->temp));
  if (pe.PersistentResourceSize)
    FAIL(buffer(D3D12_HEAP_TYPE_DEFAULT, pe.PersistentResourceSize, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, &r->persistent));
  tb.Buffer = r->temp; tb.Offset = 0; tb.SizeInBytes = temp_bytes;
  pb.Buffer = r->persistent; pb.Offset = 0; pb.SizeInBytes = pe.PersistentResourceSize;

  /* every bound tensor, the output included (its initial bytes keep the gaps), through an upload buffer */
  for (int i = 0; i < n; i++) {
    Tensor *t = &tensors[i];
    bd[i].Type = DML_BINDING_TYPE_NONE; bd[i].Desc = NULL;
    if (!t->kind) continue;
    FAIL(buffer(D3D12_HEAP_TYPE_UPLOAD, t->data_bytes, D3D12_RESOURCE_STATE_GENERIC_READ, &r->upload[i]));
    FAIL(ID3D12Resource_Map(r->upload[i], 0, &none, &p));
    memcpy(p, t->data, t->data_bytes);
    ID3D12Resource_Unmap(r->upload[i], 0, NULL);
    FAIL(buffer(D3D12_HEAP_TYPE_DEFAULT, t->data_bytes, D3D12_RESOURCE_STATE_COPY_DEST, &r->res[i]));
    ID3D12GraphicsCommandList_CopyBufferRegion(list, r->res[i], 0, r->upload[i], 0, t->data_bytes);
    transition(r->res[i], D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
    bb[i].Buffer = r->res[i]; bb[i].Offset = 0; bb[i].SizeInBytes = t->buffer.TotalTensorSizeInBytes;
    bd[i].Type = DML_BINDING_TYPE_BUFFER; bd[i].Desc = &bb[i];
  }
  FAIL(buffer(D3D12_HEAP_TYPE_READBACK, o->data_bytes, D3D12_RESOURCE_STATE_COPY_DEST, &r->readback));

  FAIL(dml->lpVtbl->CreateCommandRecorder(dml, &IID_IDMLCommandRecorder_, (void **)&r->recorder));
  td.Dispatchable = r->init;
  heap->lpVtbl->GetCPUDescriptorHandleForHeapStart(heap, &td.CPUDescriptorHandle);
  heap->lpVtbl->GetGPUDescriptorHandleForHeapStart(heap, &td.GPUDescriptorHandle);
  td.SizeInDescriptors = heap_size;
  FAIL(dml->lpVtbl->CreateBindingTable(dml, &td, &IID_IDMLBindingTable_, (void **)&r->table));
  if (pi.TemporaryResourceSize) r->table->lpVtbl->BindTemporaryResource(r->table, &tbd);
  if (pe.PersistentResourceSize) r->table->lpVtbl->BindOutputs(r->table, 1, &pbd);
  heaps[0] = heap;
  ID3D12GraphicsCommandList_SetDescriptorHeaps(list, 1, heaps);
  r->recorder->lpVtbl->RecordDispatch(r->recorder, (ID3D12CommandList *)list, r->init, r->table);
  uav_barrier();
  FAIL(submit());

  td.Dispatchable = r->compiled;
  FAIL(r->table->lpVtbl->Reset(r->table, &td));
  r->table->lpVtbl->BindInputs(r->table, (UINT)(n - 1), bd);
  r->table->lpVtbl->BindOutputs(r->table, 1, &bd[n - 1]);
  if (pe.TemporaryResourceSize) r->table->lpVtbl->BindTemporaryResource(r->table, &tbd);
  if (pe.PersistentResourceSize) r->table->lpVtbl->BindPersistentResource(r->table, &pbd);
  ID3D12GraphicsCommandList_SetDescriptorHeaps(list, 1, heaps);
  r->recorder->lpVtbl->RecordDispatch(r->recorder, (ID3D12CommandList *)list, r->compiled, r->table);
  uav_barrier();
  transition(r->res[n - 1], D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_STATE_COPY_SOURCE);
  ID3D12GraphicsCommandList_CopyBufferRegion(list, r->readback, 0, r->res[n - 1], 0, o->data_bytes);
  FAIL(submit());

  all.Begin = 0; all.End = (SIZE_T)o->data_bytes;
  FAIL(ID3D12Resource_Map(r->readback, 0, &all, &p));
  *out = malloc(o->data_bytes ? o->data_bytes : 1);
  memcpy(*out, p, o->data_bytes);
  *out_bytes = o->data_bytes;
  ID3D12Resource_Unmap(r->readback, 0, NULL);
  return S_OK;
}

/* A crash ends the process at once (Wine would otherwise start winedbg and wait); oracle.py
   records the case and resumes after it. */
static LONG WINAPI on_crash(EXCEPTION_POINTERS *e) {
  fprintf(stderr, "dml_oracle: exception 0x%08lx\n", (unsigned long)e->ExceptionRecord->ExceptionCode);
  fflush(stderr);
  TerminateProcess(GetCurrentProcess(), 5);
  return EXCEPTION_EXECUTE_HANDLER;
}

/* ---- the batch ---- */
static void put(FILE *f, const void *p, size_t n) { if (n && fwrite(p, 1, n, f) != n) die("cannot write results"); }

static void run_case(FILE *res) {
  Tensor t[10];
  DML_DEPTH_SPACE_DESC ds;
  DML_QLC_DESC qc;
  DML_QLADD_DESC qa;
  DML_JOIN_DESC jd;
  DML_TILE_DESC td;
  DML_LEAKY_RELU_DESC lr;
  DML_PRELU_DESC pr;
  DML_RESAMPLE_DESC rs0;
  DML_CLIP_DESC cl;
  DML_BINARY_DESC bi;
  DML_SCALE_BIAS sb;
  DML_RESAMPLE1_DESC rs1;
  DML_RESAMPLE3_DESC rs3;
  FLOAT floats[3][MAX_DIMS];
  DML_TENSOR_DESC joined[9];
  UINT repeats[MAX_DIMS];
  DML_OPERATOR_DESC od;
  UINT arrays[4][MAX_DIMS];
  int n = 0;
  IDMLObject *op = NULL;
  HRESULT create_hr, exec_hr = 0;
  unsigned char *out = NULL;
  UINT64 out_bytes = 0;
  UINT type = u32(), exec = u32();

  memset(&ds, 0, sizeof ds);
  memset(&qc, 0, sizeof qc);
  memset(&qa, 0, sizeof qa);
  od.Type = type;
  memset(&jd, 0, sizeof jd);
  memset(&td, 0, sizeof td);
  if (type == 147) {
    for (n = 0; n < 9; n++) qa.Tensors[n] = read_tensor(&t[n]);
    od.Desc = &qa;
  } else if (type == 39) {
    UINT alpha;
    lr.InputTensor = read_tensor(&t[0]);
    lr.OutputTensor = read_tensor(&t[1]);
    n = 2;
    alpha = u32();
    memcpy(&lr.Alpha, &alpha, 4);
    od.Desc = &lr;
  } else if (type == 42) {
    pr.InputTensor = read_tensor(&t[0]);
    pr.SlopeTensor = read_tensor(&t[1]);
    pr.OutputTensor = read_tensor(&t[2]);
    n = 3;
    od.Desc = &pr;
  } else if (type == 4 || type == 24) {
    bi.ATensor = read_tensor(&t[0]);
    bi.BTensor = read_tensor(&t[1]);
    bi.OutputTensor = read_tensor(&t[2]);
    n = 3;
    od.Desc = &bi;
  } else if (type == 8) {
    UINT has;
    cl.InputTensor = read_tensor(&t[0]);
    cl.OutputTensor = read_tensor(&t[1]);
    n = 2;
    has = u32();
    get(&sb.Scale, 4); get(&sb.Bias, 4); get(&cl.Min, 4); get(&cl.Max, 4);
    cl.ScaleBias = has ? &sb : NULL;
    od.Desc = &cl;
  } else if (type == 96 || type == 116 || type == 161 || type == 175) {
    UINT mode, rounding, antialiased, count;
    const DML_TENSOR_DESC *input = read_tensor(&t[0]), *output = read_tensor(&t[1]);
    n = 2;
    mode = u32(); rounding = u32(); antialiased = u32(); count = u32();
    if (count > MAX_DIMS) die("DimensionCount too large for the case file");
    for (int a = 0; a < 3; a++)
      for (UINT i = 0; i < count; i++) get(&floats[a][i], 4);
    if (type == 96) {
      rs0.InputTensor = input; rs0.OutputTensor = output; rs0.InterpolationMode = mode;
      rs0.ScaleCount = count; rs0.Scales = floats[0];
      od.Desc = &rs0;
    } else if (type == 116) {
      rs1.InputTensor = input; rs1.OutputTensor = output; rs1.InterpolationMode = mode;
      rs1.DimensionCount = count; rs1.Scales = floats[0]; rs1.InputPixelOffsets = floats[1];
      rs1.OutputPixelOffsets = floats[2];
      od.Desc = &rs1;
    } else {                             /* RESAMPLE2 reads the members before Antialiased */
      rs3.InputTensor = input; rs3.OutputTensor = output; rs3.InterpolationMode = mode;
      rs3.RoundingDirection = rounding; rs3.DimensionCount = count; rs3.Scales = floats[0];
      rs3.InputPixelOffsets = floats[1]; rs3.OutputPixelOffsets = floats[2]; rs3.Antialiased = (BOOL)antialiased;
      od.Desc = &rs3;
    }
  } else if (type == 63) {
    jd.InputCount = u32();
    if (jd.InputCount > 9) die("more JOIN inputs than the case file holds");
    for (n = 0; n < (int)jd.InputCount; n++) {
      if (!read_tensor(&t[n])) die("a JOIN input is null");
      joined[n] = t[n].desc;
    }
    jd.InputTensors = joined;
    jd.OutputTensor = read_tensor(&t[n++]);
    jd.Axis = u32();
    od.Desc = &jd;
  } else if (type == 70) {
    td.InputTensor = read_tensor(&t[0]);
    td.OutputTensor = read_tensor(&t[1]);
    n = 2;
    td.RepeatsCount = u32();
    if (td.RepeatsCount > MAX_DIMS) die("RepeatsCount too large for the case file");
    for (UINT i = 0; i < td.RepeatsCount; i++) repeats[i] = u32();
    td.Repeats = repeats;
    od.Desc = &td;
  } else if (type == 120) {
    for (n = 0; n < 10; n++) qc.Tensors[n] = read_tensor(&t[n]);
    qc.DimensionCount = u32();
    if (qc.DimensionCount > MAX_DIMS) die("DimensionCount too large for the case file");
    for (int a = 0; a < 4; a++)
      for (UINT i = 0; i < qc.DimensionCount; i++) arrays[a][i] = u32();
    qc.Strides = arrays[0]; qc.Dilations = arrays[1]; qc.StartPadding = arrays[2]; qc.EndPadding = arrays[3];
    qc.GroupCount = u32();
    od.Desc = &qc;
  } else {
    ds.InputTensor = read_tensor(&t[0]);
    ds.OutputTensor = read_tensor(&t[1]);
    n = 2;
    ds.BlockSize = u32();
    ds.Order = (INT)u32();
    od.Desc = &ds;
  }
  if (exec)
    for (int i = 0; i < n; i++) {
      if (!t[i].kind) continue;
      t[i].data_bytes = u64();
      t[i].data = malloc(t[i].data_bytes ? t[i].data_bytes : 1);
      get(t[i].data, t[i].data_bytes);
    }

  create_hr = dml->lpVtbl->CreateOperator(dml, &od, &IID_IDMLOperator_, (void **)&op);
  if (create_hr == DXGI_ERROR_DEVICE_REMOVED) {
    fprintf(stderr, "dml_oracle: the device is lost; oracle.py runs this case again in a new process\n");
    exit(7);
  }
  if (SUCCEEDED(create_hr) && exec) {
    Run r;
    memset(&r, 0, sizeof r);
    exec_hr = execute(&r, op, t, n, &out, &out_bytes);
    release_run(&r);
    if (FAILED(exec_hr)) { free(out); out = NULL; out_bytes = 0; }
  }
  if (op) op->lpVtbl->Release(op);
  for (int i = 0; i < n; i++) free(t[i].data);
  put(res, &create_hr, 4);
  put(res, &exec_hr, 4);
  put(res, &out_bytes, 8);
  put(res, out, out_bytes);
  fflush(res);
  free(out);
  if (FAILED(exec_hr)) {
    fprintf(stderr, "dml_oracle: execution failed (0x%08lx); oracle.py resumes in a new process\n",
            (unsigned long)exec_hr);
    exit(6);
  }
}

int main(int argc, char **argv) {
  static const INT levels[] = {0x1000, 0x2000, 0x2100, 0x3000, 0x3100, 0x4000, 0x4100, 0x5000, 0x5100,
                               0x5200, 0x6000, 0x6100, 0x6200, 0x6300, 0x6400};
  DML_FEATURE_LEVELS_QUERY q = {sizeof levels / sizeof levels[0], levels};
  D3D12_COMMAND_QUEUE_DESC qd = {0};
  HMODULE lib;
  PFN_DMLCreateDevice1 create_device;
  HRESULT hr;
  INT max_level = 0;
  UINT types = 0, count, version;
  char magic[4];
  FILE *res;

  SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
  SetUnhandledExceptionFilter(on_crash);
  if (argc != 3) die("usage: dml_oracle.exe CASES RESULTS");
  if (!(in = fopen(argv[1], "rb"))) die("cannot open the case file");
  get(magic, 4);
  if (memcmp(magic, "DMLC", 4)) die("not a case file");
  version = u32();
  if (version != 1) die("unknown case file version");
  count = u32();
  if (!(res = fopen(argv[2], "wb"))) die("cannot create the results file");

  hr = D3D12CreateDevice(NULL, D3D_FEATURE_LEVEL_11_0, &IID_ID3D12Device, (void **)&dev);
  if (FAILED(hr)) { fprintf(stderr, "dml_oracle: D3D12CreateDevice failed: 0x%08lx\n", (unsigned long)hr); return 3; }
  qd.Type = D3D12_COMMAND_LIST_TYPE_DIRECT;
  if (FAILED(ID3D12Device_CreateCommandQueue(dev, &qd, &IID_ID3D12CommandQueue, (void **)&queue))
      || FAILED(ID3D12Device_CreateCommandAllocator(dev, D3D12_COMMAND_LIST_TYPE_DIRECT, &IID_ID3D12CommandAllocator,
                                                    (void **)&allocator))
      || FAILED(ID3D12Device_CreateCommandList(dev, 0, D3D12_COMMAND_LIST_TYPE_DIRECT, allocator, NULL,
                                               &IID_ID3D12GraphicsCommandList, (void **)&list))
      || FAILED(ID3D12Device_CreateFence(dev, 0, D3D12_FENCE_FLAG_NONE, &IID_ID3D12Fence, (void **)&fence)))
    die("cannot create the D3D12 queue, command list or fence");
  fence_event = CreateEventA(NULL, FALSE, FALSE, NULL);

  if (!(lib = LoadLibraryA("DirectML.dll"))) die("cannot load DirectML.dll");
  if (!(create_device = (PFN_DMLCreateDevice1)(void *)GetProcAddress(lib, "DMLCreateDevice1")))
    die("DirectML.dll has no DMLCreateDevice1");
  hr = create_device(dev, 0 /* DML_CREATE_DEVICE_FLAG_NONE */, 0x1000, &IID_IDMLDevice_, (void **)&dml);
  if (SUCCEEDED(hr)) {
    dml->lpVtbl->CheckFeatureSupport(dml, DML_FEATURE_FEATURE_LEVELS, sizeof q, &q, sizeof max_level, &max_level);
    for (UINT dt = 1; dt <= 13; dt++) {
      BOOL supported = FALSE;
      if (SUCCEEDED(dml->lpVtbl->CheckFeatureSupport(dml, DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof dt, &dt,
                                                     sizeof supported, &supported)) && supported)
        types |= 1u << dt;
    }
  }
  put(res, "DMLR", 4);
  version = 1;
  put(res, &version, 4);
  put(res, &hr, 4);
  put(res, &max_level, 4);
  put(res, &types, 4);
  fflush(res);
  if (FAILED(hr)) return 4;
  for (UINT i = 0; i < count; i++) run_case(res);
  if (heap) ID3D12DescriptorHeap_Release(heap);
  dml->lpVtbl->Release(dml);
  fclose(res);
  return 0;
}
