// Launching domains on a back end and naming the verdict: what every kind of
// run of pvmmu-run (programs, --config, --fuzz) shares.
#include <csignal>
#include <cstring>

#include "run_cli.h"
#include "run_libvirt.h"

namespace pvmmu::run {

const Backend* backend_of(const std::string& platform)
{
    for (const Backend* b : {&kQemu, &kXen, &kXenHost, &kBochs, &kLibvirt})
        if (platform == b->name) return b;
    return nullptr;
}

const char* word_of(int code)
{
    switch (code) {
    case 0: return "SUCCESS";
    case 3: return "SKIP";
    case 4: return "ERROR";
    case 5: return "FAILURE";
    case kRefused: return "REFUSED";
    default: return code >= kInterruptedBase ? "INTERRUPTED" : "CRASHED";
    }
}

std::string domain_label(const std::vector<Domain>& doms, size_t i)
{
    const Domain& d = doms[i];
    const std::string name = d.name.empty() ? d.kernel.substr(d.kernel.rfind('/') + 1) : d.name;
    return "domain " + std::to_string(i + 1) + " (" + printable(name) + ")";
}

// Boots the domains on a back end and judges the run: a result after which
// the last domain powered off, or (need_result false) the power-off alone.
// A domain the hypervisor refused to build makes the run kRefused, with the
// domain and the loader's reason. `ends`: each domain's end, as its console
// lines tell it (run_domains.h).
int launch(const Backend& b, const std::vector<Domain>& doms, const Options& o, bool need_result, std::string& why,
           std::vector<std::string>* console, std::vector<DomainEnd>* ends, bool (*keep)(const std::string&))
{
    if (b.lacks) why = b.lacks(doms);
    if (!why.empty()) return kSkipped;
    Launch l;
    const int prepared = b.prepare(doms, o, l, why);
    // A signal while the back end prepared (Ctrl-C reaches make-iso.sh or
    // fetch-xen.sh too, which then fail): the run was ended, whatever they said.
    if (const int sig = interrupted()) {
        why = "interrupted by SIG" + std::string(sigabbrev_np(sig)) + " before the machine started";
        return kInterruptedBase + sig;
    }
    if (prepared) return prepared;
    // Without a console asked for, only the lines domain_ends reads are kept.
    std::vector<std::string> own;
    int code = run_child(l, o, kPoweroffStatus, need_result, why, console ? console : &own,
                         console ? keep : domain_line);
    if (!console) console = &own;
    const std::vector<DomainEnd> e = domain_ends(*console, kernel_modules(doms));
    if (code < kInterruptedBase) {
        for (size_t i = 0; i < e.size(); ++i) {
            if (e[i].refused.empty()) continue;
            why = domain_label(doms, i) + ": refused: " + printable(e[i].refused);
            code = kRefused;
            break;
        }
    }
    if (ends) *ends = e;
    return code;
}

} // namespace pvmmu::run
