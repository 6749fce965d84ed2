// The guest programs pvmmu-run knows (tools/pvmmu-run.cmake generates the
// list from the guest tests) and what each asks of its platform.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "run_cli.h"

namespace pvmmu::run {

namespace {

const Program kPrograms[] = {
#include "pvmmu-run-programs.inc"
};

} // namespace

std::span<const Program> programs() { return kPrograms; }

const Program* find(const std::string& name)
{
    for (const Program& p : kPrograms)
        if (name == p.name) return &p;
    return nullptr;
}

TestInfo info_of(const Program& p)
{
    std::string cmd = std::string("'") + p.path + "' --info 2>/dev/null";
    TestInfo t;
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) return t;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), f)) {
        std::string l = buf;
        if (!l.empty() && l.back() == '\n') l.pop_back();
        auto value = [&](const char* key) -> const char* {
            const size_t n = std::strlen(key);
            return l.compare(0, n, key) == 0 ? l.c_str() + n : nullptr;
        };
        if (const char* v = value("title: ")) t.title = v;
        if (const char* v = value("cpus: ")) t.cpus = unsigned(std::strtoul(v, nullptr, 0));
        if (const char* v = value("frames: ")) t.frames = std::strtoul(v, nullptr, 0);
        if (const char* v = value("deny: ")) t.deny = std::strtoul(v, nullptr, 0);
        if (const char* v = value("second_domain: ")) t.second_domain = std::strtoul(v, nullptr, 0) != 0;
        if (const char* v = value("second_domain_frames: ")) t.second_domain_frames = std::strtoul(v, nullptr, 0);
        if (const char* v = value("tlb_caches_invalid: ")) t.tlb_caches_invalid = std::strtoul(v, nullptr, 0) != 0;
        if (const char* v = value("coherent_walker: ")) t.coherent_walker = std::strtoul(v, nullptr, 0) != 0;
    }
    pclose(f);
    return t;
}

Domain domain_of(const Program& p, const TestInfo& t, const Options& o)
{
    Domain d;
    d.name = p.name;
    d.kernel = p.kernel;
    d.vcpus = o.cpus.empty() ? t.cpus : unsigned(std::strtoul(o.cpus.c_str(), nullptr, 10));
    d.frames = t.frames;
    d.deny = t.deny;
    d.peer_frames = t.second_domain ? t.second_domain_frames : 0;
    return d;
}

// Why x86 cannot run a test: docs/design.md §5 properties it does not have, so what
// these tests count (faults on cached misses, cleans) cannot happen there.
std::string x86_lacks(const TestInfo& t)
{
    if (t.tlb_caches_invalid) return "needs a TLB that caches not-present translations (docs/design.md §5); x86 TLBs never do";
    if (!t.coherent_walker) return "needs a page walker not coherent with the data cache (docs/design.md §5); the x86 walker is coherent";
    return "";
}

} // namespace pvmmu::run
