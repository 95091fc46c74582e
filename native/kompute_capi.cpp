// dmlvk's plain C interface to Kompute 0.9.0 (with the patches in third_party/kompute): the native
// part of dmlvk, loaded from Python with ctypes (dmlvk/runtime/kompute.py). No Python header is
// compiled in, so one library serves every CPython: the wheel is py3-none.
//
// Conventions:
// - Objects are opaque handles, each owning one std::shared_ptr to a Kompute object; *_free drops it.
//   Kompute's own references (an algorithm holds its tensors, a sequence its operations) keep what
//   they use alive.
// - A function that can fail returns 0, or DMLVK_KP_ERROR with a message for
//   dmlvk_kp_last_error() (per thread), or DMLVK_KP_NO_MEMORY when host memory ran out.
// - Nothing here calls back into Python, so ctypes runs every call with the GIL released.
#include <kompute/Kompute.hpp>

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#define DMLVK_KP_API extern "C" __attribute__((visibility("default")))

namespace {

enum Status : int
{
    OK = 0,
    ERROR = 1,
    NO_MEMORY = 2,
};

thread_local std::string lastError;

template<typename F>
int guarded(F&& f) noexcept
{
    try {
        f();
        return OK;
    } catch (const std::bad_alloc&) {
        lastError = "host memory exhausted";
        return NO_MEMORY;
    } catch (const std::exception& e) {
        lastError = e.what();
        return ERROR;
    } catch (...) {
        lastError = "unknown C++ exception in Kompute";
        return ERROR;
    }
}

// A global memory barrier: one vkCmdPipelineBarrier with one VkMemoryBarrier (Kompute's
// OpMemoryBarrier records a buffer barrier per tensor).
class OpPipelineBarrier : public kp::OpBase
{
  public:
    OpPipelineBarrier(uint32_t srcAccess, uint32_t dstAccess, uint32_t srcStage, uint32_t dstStage)
      : mSrcAccess(srcAccess)
      , mDstAccess(dstAccess)
      , mSrcStage(srcStage)
      , mDstStage(dstStage)
    {
    }

    void record(const vk::CommandBuffer& commandBuffer) override
    {
        vk::MemoryBarrier barrier{ vk::AccessFlags(mSrcAccess), vk::AccessFlags(mDstAccess) };
        commandBuffer.pipelineBarrier(vk::PipelineStageFlags(mSrcStage),
                                      vk::PipelineStageFlags(mDstStage),
                                      vk::DependencyFlags(),
                                      1,
                                      &barrier,
                                      0,
                                      nullptr,
                                      0,
                                      nullptr);
    }

    void preEval(const vk::CommandBuffer&) override {}
    void postEval(const vk::CommandBuffer&) override {}

  private:
    uint32_t mSrcAccess, mDstAccess, mSrcStage, mDstStage;
};

template<typename T>
struct Handle
{
    std::shared_ptr<T> ptr;
};

using Manager = Handle<kp::Manager>;
using Tensor = Handle<kp::Tensor>;
using Algorithm = Handle<kp::Algorithm>;
using Sequence = Handle<kp::Sequence>;

std::vector<std::shared_ptr<kp::Tensor>>
tensorList(Tensor* const* tensors, uint32_t count)
{
    std::vector<std::shared_ptr<kp::Tensor>> out;
    out.reserve(count);
    for (uint32_t i = 0; i < count; i++) {
        out.push_back(tensors[i]->ptr);
    }
    return out;
}

} // namespace

// ---- the library -------------------------------------------------------------------------------

// Raised whenever a signature below changes; dmlvk/runtime/kompute.py checks it.
DMLVK_KP_API uint32_t dmlvk_kp_abi_version() { return 2; }

DMLVK_KP_API const char* dmlvk_kp_last_error() { return lastError.c_str(); }

DMLVK_KP_API void dmlvk_kp_set_fence_spin_us(uint32_t microseconds)
{
    kp::Sequence::setFenceSpinMicroseconds(microseconds);
}

// Host-visible memory of tensors made from now on from a HOST_CACHED type where there is one.
DMLVK_KP_API void dmlvk_kp_set_host_cached(int prefer)
{
    kp::Tensor::setPreferHostCached(prefer != 0);
}

// ---- Manager -----------------------------------------------------------------------------------

DMLVK_KP_API int dmlvk_manager_new(uint32_t deviceIndex, Manager** out)
{
    return guarded([&] { *out = new Manager{ std::make_shared<kp::Manager>(deviceIndex) }; });
}

DMLVK_KP_API void dmlvk_manager_free(Manager* m) { delete m; }

DMLVK_KP_API int dmlvk_manager_clear(Manager* m)
{
    return guarded([&] { m->ptr->clear(); });
}

DMLVK_KP_API uint32_t dmlvk_manager_api_version(Manager* m) { return m->ptr->getApiVersion(); }

// The enabled features and extensions, one name per line, into buf (capacity bytes, NUL included);
// returns the bytes the whole text needs, NUL included.
DMLVK_KP_API uint64_t dmlvk_manager_enabled_features(Manager* m, char* buf, uint64_t capacity)
{
    std::string text;
    for (const std::string& name : m->ptr->getEnabledFeatures()) {
        text += name;
        text += '\n';
    }
    if (capacity > 0) {
        uint64_t n = text.size() < capacity ? text.size() : capacity - 1;
        std::memcpy(buf, text.data(), n);
        buf[n] = '\0';
    }
    return text.size() + 1;
}

// (size, budget, usage, flags) of each memory heap into out (4 * capacity values); returns the
// number of heaps.
DMLVK_KP_API uint32_t dmlvk_manager_memory_heaps(Manager* m, uint64_t* out, uint32_t capacity)
{
    std::vector<std::array<uint64_t, 4>> heaps = m->ptr->getMemoryHeaps();
    for (uint32_t i = 0; i < heaps.size() && i < capacity; i++) {
        std::memcpy(out + 4 * i, heaps[i].data(), sizeof(heaps[i]));
    }
    return static_cast<uint32_t>(heaps.size());
}

// ---- Tensor: 32-bit words, zero-filled; host=1 is one host-visible buffer, 0 device-local memory
// with a host-visible staging buffer ---------------------------------------------------------------

DMLVK_KP_API int dmlvk_tensor_new(Manager* m, uint32_t words, int host, Tensor** out)
{
    return guarded([&] {
        std::vector<uint32_t> zeros(words, 0u);
        auto type = host ? kp::Tensor::TensorTypes::eHost : kp::Tensor::TensorTypes::eDevice;
        *out = new Tensor{ m->ptr->tensorT<uint32_t>(zeros, type) };
    });
}

DMLVK_KP_API void dmlvk_tensor_free(Tensor* t) { delete t; }

// The VkMemoryPropertyFlags of the tensor's host-visible memory (its staging buffer's).
DMLVK_KP_API uint32_t dmlvk_tensor_host_memory_flags(Tensor* t) { return t->ptr->hostMemoryPropertyFlags(); }

// The mapped host memory (the staging buffer of a device tensor) and its size in bytes.
DMLVK_KP_API void* dmlvk_tensor_data(Tensor* t, uint64_t* bytes)
{
    *bytes = t->ptr->memorySize();
    return t->ptr->rawData();
}

// ---- Algorithm: one pipeline and descriptor set over tensors, with uint32 specialization and
// push constants -----------------------------------------------------------------------------------

DMLVK_KP_API int dmlvk_algorithm_new(Manager* m,
                                     Tensor* const* tensors,
                                     uint32_t tensorCount,
                                     const uint32_t* spirv,
                                     uint64_t spirvWords,
                                     const uint32_t* workgroups,
                                     const uint32_t* spec,
                                     uint32_t specCount,
                                     const uint32_t* push,
                                     uint32_t pushCount,
                                     Algorithm** out)
{
    return guarded([&] {
        std::vector<uint32_t> code(spirv, spirv + spirvWords);
        kp::Workgroup grid{ workgroups[0], workgroups[1], workgroups[2] };
        std::vector<uint32_t> specs(spec, spec + specCount);
        std::vector<uint32_t> pushes(push, push + pushCount);
        *out = new Algorithm{ m->ptr->algorithm<uint32_t, uint32_t>(
          tensorList(tensors, tensorCount), code, grid, specs, pushes) };
    });
}

DMLVK_KP_API void dmlvk_algorithm_free(Algorithm* a) { delete a; }

// Other tensors (as many as before) into the descriptor set; the pipeline stays.
DMLVK_KP_API int dmlvk_algorithm_set_tensors(Algorithm* a, Tensor* const* tensors, uint32_t count)
{
    return guarded([&] { a->ptr->setTensors(tensorList(tensors, count)); });
}

// ---- Sequence: one command buffer, recorded once and submitted many times ------------------------

DMLVK_KP_API int dmlvk_sequence_new(Manager* m, uint32_t totalTimestamps, Sequence** out)
{
    return guarded([&] { *out = new Sequence{ m->ptr->sequence(0, totalTimestamps) }; });
}

DMLVK_KP_API void dmlvk_sequence_free(Sequence* s) { delete s; }

DMLVK_KP_API int dmlvk_sequence_clear(Sequence* s)
{
    return guarded([&] { s->ptr->clear(); });
}

DMLVK_KP_API int dmlvk_sequence_record_dispatch(Sequence* s,
                                                Algorithm* a,
                                                const uint32_t* push,
                                                uint32_t pushCount)
{
    return guarded([&] {
        std::vector<uint32_t> pushes(push, push + pushCount);
        s->ptr->record(std::make_shared<kp::OpAlgoDispatch>(a->ptr, pushes));
    });
}

// to_device=1 records the staging-to-device copies of the tensors, 0 the device-to-staging ones.
DMLVK_KP_API int dmlvk_sequence_record_sync(Sequence* s, Tensor* const* tensors, uint32_t count, int toDevice)
{
    return guarded([&] {
        auto list = tensorList(tensors, count);
        if (toDevice) {
            s->ptr->record(std::make_shared<kp::OpTensorSyncDevice>(list));
        } else {
            s->ptr->record(std::make_shared<kp::OpTensorSyncLocal>(list));
        }
    });
}

// One global memory barrier; masks are VkAccessFlags and VkPipelineStageFlags values.
DMLVK_KP_API int dmlvk_sequence_record_barrier(Sequence* s,
                                               uint32_t srcAccess,
                                               uint32_t dstAccess,
                                               uint32_t srcStage,
                                               uint32_t dstStage)
{
    return guarded([&] {
        s->ptr->record(std::make_shared<OpPipelineBarrier>(srcAccess, dstAccess, srcStage, dstStage));
    });
}

DMLVK_KP_API int dmlvk_sequence_eval(Sequence* s)
{
    return guarded([&] { s->ptr->eval(); });
}

DMLVK_KP_API int dmlvk_sequence_eval_async(Sequence* s)
{
    return guarded([&] { s->ptr->evalAsync(); });
}

DMLVK_KP_API int dmlvk_sequence_eval_await(Sequence* s, uint64_t timeoutNs)
{
    return guarded([&] { s->ptr->evalAwait(timeoutNs); });
}

// The timestamps of the last submission into out (capacity values); *count: how many there are.
DMLVK_KP_API int dmlvk_sequence_timestamps(Sequence* s, uint64_t* out, uint32_t capacity, uint32_t* count)
{
    return guarded([&] {
        std::vector<uint64_t> ticks = s->ptr->getTimestamps();
        for (uint32_t i = 0; i < ticks.size() && i < capacity; i++) {
            out[i] = ticks[i];
        }
        *count = static_cast<uint32_t>(ticks.size());
    });
}
