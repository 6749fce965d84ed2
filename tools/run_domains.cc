// domain_ends and domain_verdict; see run_domains.h.
#include "run_domains.h"

#include <cstdio>
#include <cstring>

#include "run_backend.h"

namespace pvmmu::run {

namespace {

bool starts(const std::string& l, const char* prefix) { return l.compare(0, std::strlen(prefix), prefix) == 0; }

// The module whose domain is `id`, or the one just before it (a peer domain
// takes the id after its module's, docs/abi.md §10 "Policy and peer").
DomainEnd* owner(std::vector<DomainEnd>& ends, unsigned id)
{
    DomainEnd* best = nullptr;
    for (DomainEnd& e : ends)
        if (e.id && e.id <= id && (!best || e.id > best->id)) best = &e;
    return best;
}

} // namespace

bool domain_line(const std::string& l) { return starts(l, "domain") || starts(l, "pvmmu: "); }

std::vector<DomainEnd> domain_ends(const std::vector<std::string>& console, size_t n)
{
    std::vector<size_t> modules(n);
    for (size_t i = 0; i < n; ++i) modules[i] = i;
    return domain_ends(console, modules);
}

std::vector<DomainEnd> domain_ends(const std::vector<std::string>& console, const std::vector<size_t>& kernel_module)
{
    std::vector<DomainEnd> ends(kernel_module.size());
    std::string refusal;   // the loader's last reason, for the FAILED line that follows it
    for (const std::string& l : console) {
        unsigned id = 0, module = 0;
        int at = 0;
        if (std::sscanf(l.c_str(), "domain %u: loading module %u (%n", &id, &module, &at) == 2 && at) {
            for (size_t d = 0; d < kernel_module.size(); ++d)
                if (kernel_module[d] == module) ends[d].id = id;
            refusal.clear();
        } else if (std::sscanf(l.c_str(), "domain %u: guest image refused: %n", &id, &at) == 1 && at) {
            refusal = l.substr(size_t(at));
        } else if (starts(l, "domain: ") && l.find(" refused") != std::string::npos) {
            refusal = l.substr(std::strlen("domain: "));
        } else if (std::sscanf(l.c_str(), "pvmmu: FAILED: domain %u%n", &id, &at) == 1 && at) {
            DomainEnd* e = owner(ends, id);
            if (!e) continue;
            const std::string rest = l.substr(size_t(at));
            if (rest == " was not built") e->refused = refusal.empty() ? "not built" : refusal;
            else e->refused = rest.compare(0, 2, ": ") == 0 ? rest.substr(2) : rest.substr(rest.find_first_not_of(' '));
        } else if (std::sscanf(l.c_str(), "pvmmu: domain %u shut down (%n", &id, &at) == 1 && at) {
            const size_t close = l.find(')', size_t(at));
            for (DomainEnd& e : ends)
                if (e.id == id && close != std::string::npos) e.shutdown = l.substr(size_t(at), close - size_t(at));
        }
    }
    return ends;
}

bool from_pvmmu(const std::vector<DomainEnd>& ends)
{
    for (const DomainEnd& e : ends)
        if (e.id) return true;
    return false;
}

int domain_verdict(const DomainEnd& e, std::string& what)
{
    if (!e.refused.empty()) {
        what = "refused: " + e.refused;
        return kRefused;
    }
    if (e.shutdown == "poweroff") {
        what = "powered off";
        return 0;
    }
    what = e.shutdown.empty() ? (e.id ? "never shut down" : "never loaded") : "shut down (" + e.shutdown + ")";
    return kCrashed;
}

} // namespace pvmmu::run
