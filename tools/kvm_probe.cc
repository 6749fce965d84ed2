// The KVM self-test behind pvmmu-run's choice of accelerator; see kvm_probe.h.
#include "kvm_probe.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include "run_backend.h"

namespace pvmmu::run {

namespace {

bool has_line(const std::string& console, const std::string& start, const std::string& inside = "")
{
    std::istringstream in(console);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind(start, 0) == 0 && line.find(inside) != std::string::npos) return true;
    }
    return false;
}

std::string last_line(const std::string& console)
{
    std::istringstream in(console);
    std::string last;
    for (std::string line; std::getline(in, line);)
        if (line.find_first_not_of(" \r\t") != std::string::npos) last = line;
    while (!last.empty() && last.back() == '\r') last.pop_back();
    return last.size() > 100 ? last.substr(0, 100) + "..." : last;
}

const char* word_of(KvmProbe p)
{
    switch (p) {
    case KvmProbe::Passed: return "passed";
    case KvmProbe::StaysAtCpl3: return "cpl3";
    case KvmProbe::Failed: break;
    }
    return "failed";
}

// What the verdict depends on: this boot of the host (its kernel and KVM
// module) and the probe image. Empty if either cannot be read.
std::string cache_key(const std::string& probe_image)
{
    std::ifstream b("/proc/sys/kernel/random/boot_id");
    std::string boot_id;
    struct stat st;
    if (!std::getline(b, boot_id) || boot_id.empty() || stat(probe_image.c_str(), &st) != 0) return "";
    return boot_id + " " + std::to_string(st.st_size) + "." + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
}

bool read_cache(const std::string& cache, const std::string& key, KvmVerdict& v)
{
    std::ifstream f(cache);
    std::string line;
    if (key.empty() || !std::getline(f, line) || line.rfind(key + " ", 0) != 0) return false;
    std::istringstream rest(line.substr(key.size() + 1));
    std::string word;
    rest >> word;
    if (word == "passed") v.result = KvmProbe::Passed;
    else if (word == "cpl3") v.result = KvmProbe::StaysAtCpl3;
    else if (word == "failed") v.result = KvmProbe::Failed;
    else return false;
    std::getline(rest >> std::ws, v.detail);
    return true;
}

} // namespace

KvmVerdict judge_probe(int qemu_status, const std::string& console)
{
    if (qemu_status == 1 && has_line(console, "probe: all ok")) return {KvmProbe::Passed, "every SYSCALL entered ring 0"};
    // probe_test.sh's signature of the PVM back end: the #PF at LSTAR has the
    // user-mode bit (error code 0x15) and the frame's CS is the ring-3 selector.
    if (has_line(console, "probe: FAILED") &&
        has_line(console, "slot ", "SYSCALL from ring 3 exception: vector 0xe error code 0x15 ") &&
        has_line(console, "slot ", " cs 0xe033 "))
        return {KvmProbe::StaysAtCpl3, "SYSCALL from ring 3 stayed at CPL 3"};
    if (qemu_status == 124 || qemu_status == 137) return {KvmProbe::Failed, "the probe did not end in time"};
    const std::string last = last_line(console);
    return {KvmProbe::Failed, "QEMU exit status " + std::to_string(qemu_status) + (last.empty() ? "" : ": " + last)};
}

KvmVerdict kvm_self_test(const std::string& probe_image, const std::string& cache, double timeout_s)
{
    struct stat st;
    if (stat(probe_image.c_str(), &st) != 0)
        return {KvmProbe::Failed, "no probe image at " + probe_image + " (build the syscall-probe target)"};
    const std::string key = cache.empty() ? "" : cache_key(probe_image);
    KvmVerdict v;
    if (read_cache(cache, key, v)) return v;
    char limit[32];
    std::snprintf(limit, sizeof(limit), "%.0f", timeout_s);
    std::string console;
    const int status = run_tool(std::string("timeout -k 5 ") + limit +
                                    " qemu-system-x86_64 -accel kvm -machine pc -m 64 -kernel " + quoted(probe_image) +
                                    " -display none -serial stdio -monitor none -no-reboot -device " + kIsaDebugExit +
                                    " </dev/null 2>&1",
                                console);
    v = judge_probe(status, console);
    if (!key.empty()) {
        // Whole or not at all: tests run in parallel may probe at once.
        const std::string tmp = cache + ".tmp." + std::to_string(getpid());
        std::ofstream(tmp) << key << " " << word_of(v.result) << " " << v.detail << "\n";
        if (std::rename(tmp.c_str(), cache.c_str()) != 0) std::remove(tmp.c_str());
    }
    return v;
}

std::string describe(const KvmVerdict& v)
{
    return v.result == KvmProbe::Passed ? "passed the self-test" : "failed the self-test (" + v.detail + ")";
}

AccelChoice choose_accel(const std::string& asked, bool kvm_usable, const std::function<KvmVerdict()>& self_test)
{
    if (asked != "" && asked != "kvm" && asked != "kvm-qualified") return {asked, ""};
    if (!kvm_usable) {
        if (asked == "") return {"tcg", ""};   // no KVM here: nothing to say
        if (asked == "kvm") return {"kvm", ""};   // QEMU says why it cannot
        return {"", "/dev/kvm is not usable here"};
    }
    const KvmVerdict v = self_test();
    const bool ok = v.result == KvmProbe::Passed;
    if (asked == "kvm-qualified") return {ok ? "kvm" : "", ok ? "" : "/dev/kvm " + describe(v)};
    if (asked == "kvm")
        return {"kvm", ok ? "" : "warning: /dev/kvm " + describe(v) + ": using KVM as --accel kvm asks; guests may crash"};
    if (ok) return {"kvm", ""};
    return {"tcg", "/dev/kvm is present but " + describe(v) + ": using TCG"};
}

} // namespace pvmmu::run
