#include "capture/backend.h"

#include "capture/kmod_session.h"
#include "capture/session.h"
#include "jackdaw/kmod.h"

namespace jackdaw::capture {

StatusOr<std::unique_ptr<CaptureBackend>> OpenBackend(const CaptureOptions& opts, const std::string& backend,
                                                      BackendClock clock, std::string* choice) {
  const bool mono = clock == BackendClock::kMonoNs;
  if (backend == "kmod") {
    ASSIGN_OR_RETURN(auto k, KmodSession::Create(opts, mono));
    *choice = "kmod (requested)";
    return std::unique_ptr<CaptureBackend>(std::move(k));
  }
  if (backend != "bpf" && backend != "auto")
    return ErrStatus("unknown backend '%s'; valid: bpf, kmod, auto", backend.c_str());
  auto b = CaptureSession::Create(opts);
  if (b.ok()) {
    *choice = backend == "auto" ? "bpf (auto: the eBPF probes load)" : "bpf (requested)";
    return std::unique_ptr<CaptureBackend>(std::move(b).value());
  }
  if (backend == "bpf") return b.status();
  if (!KmodSession::DevicePresent())
    return Status::Error("jackdaw: no capture backend works: eBPF failed (" + b.status().message() +
                             ") and the jackdaw.ko module is not loaded (" JDW_KMOD_DEVICE " missing)",
                         b.status().exit_code());
  auto k = KmodSession::Create(opts, mono);
  if (!k.ok())
    return Status::Error("jackdaw: no capture backend works: eBPF failed (" + b.status().message() +
                             "); kmod failed (" + k.status().message() + ")",
                         k.status().exit_code());
  *choice = "kmod (auto: eBPF failed: " + b.status().message() + ")";
  return std::unique_ptr<CaptureBackend>(std::move(k).value());
}

}  // namespace jackdaw::capture
