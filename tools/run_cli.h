// What the files of pvmmu-run share (pvmmu-run.cc describes the tool): its
// options, the guest programs it knows, the launch of domains on a back end
// and the words of its verdicts. The back ends themselves are run_backend.h.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "run_backend.h"
#include "run_domains.h"

namespace pvmmu::run {

// --fuzz: the hostile guest's run (its module words, docs/security.md §7.10).
struct FuzzOptions {
    bool on = false;
    bool seed_set = false;
    unsigned long long seed = 0;
    unsigned long long ops = 0;        // 0: 100000, or no limit when time_s is given
    unsigned long long time_s = 0;     // 0: no limit
    unsigned long long check = 1000;   // the invariant check every N operations
    unsigned long long trace = 0;      // print every operation from this one on (0: none)
    bool trace_set = false;
    bool edges = true;                 // SYSCALL at the canonical boundary
    std::string with = "tlb-shootdown";   // the well-behaved domain's program, or "none"
};

struct RunOptions : Options {
    std::vector<std::string> names;
    std::vector<std::string> configs;   // --config: xl.cfg files, one domain each
    FuzzOptions fuzz;
};

// The command line (run_args.cc). Options that do their job at once
// (--help, --kvm-self-test) or a usage error end the parse: `exit_code`
// is set and the tool exits with it.
struct CommandLine {
    RunOptions run;
    bool list = false, describe_host = false;
    std::string boot_args, print_xml;
    int exit_code = -1;   // -1: go on
};
CommandLine parse_args(int argc, char** argv);
void usage(FILE* f);   // run_usage.cc
int kvm_self_test_command();   // pvmmu-run.cc

// The guest programs (run_programs.cc): the guest tests, each as its sim
// program and its guest kernel for the bare-metal hypervisor.
struct Program {
    const char* name;
    const char* path;     // the sim program
    const char* kernel;   // the guest kernel for the bare-metal hypervisor
};
std::span<const Program> programs();
const Program* find(const std::string& name);

// What a test asks of its platform (TestConfig), as its sim program's
// --info prints it.
struct TestInfo {
    std::string title;
    unsigned cpus = 1;
    unsigned long frames = 4096;
    unsigned long deny = 0;
    bool second_domain = false;
    unsigned long second_domain_frames = 0;   // its size, as the sim gives it
    bool tlb_caches_invalid = false, coherent_walker = true;
};
TestInfo info_of(const Program& p);
// A guest program's domain: the test's size, vCPUs (or --cpus), policy and
// second domain.
Domain domain_of(const Program& p, const TestInfo& t, const Options& o);
// Why x86 cannot run a test ("" when it can).
std::string x86_lacks(const TestInfo& t);

// Launching (run_launch.cc).
// The back end of --platform; nullptr for sim.
const Backend* backend_of(const std::string& platform);
// An exit code's word: SUCCESS, SKIP, ERROR, FAILURE, REFUSED, CRASHED, INTERRUPTED.
const char* word_of(int code);
// A domain as the launcher's lines name it: its number and name, escaped.
std::string domain_label(const std::vector<Domain>& doms, size_t i);
// Boots the domains on a back end and judges the run (run_launch.cc says how).
int launch(const Backend& b, const std::vector<Domain>& doms, const Options& o, bool need_result, std::string& why,
           std::vector<std::string>* console = nullptr, std::vector<DomainEnd>* ends = nullptr,
           bool (*keep)(const std::string&) = nullptr);

// --config: every file one domain, all booted together (run_configs.cc).
int run_configs(const RunOptions& o);
// --fuzz: the hostile guest next to a well-behaved one (run_fuzz.cc).
int run_fuzz(RunOptions o);

} // namespace pvmmu::run
