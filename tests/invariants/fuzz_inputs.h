// The fuzzer's saved inputs, for the replay tests: every file of fuzz/corpus/
// (the seeds and what the fuzzer kept) and fuzz/regressions/ (inputs that once
// broke an invariant; each also has a named test in fuzz_regression_test.cc).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace pvmmu::test {

struct FuzzInput {
    std::string name;
    std::vector<uint8_t> bytes;
};

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& p)
{
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline std::vector<FuzzInput> fuzz_inputs(const char* subdir)
{
    std::vector<FuzzInput> out;
    const std::filesystem::path dir = std::filesystem::path(PVMMU_FUZZ_DIR) / subdir;
    if (!std::filesystem::is_directory(dir)) return out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_regular_file()) out.push_back(FuzzInput{e.path().filename().string(), read_bytes(e.path())});
    std::sort(out.begin(), out.end(), [](const FuzzInput& a, const FuzzInput& b) { return a.name < b.name; });
    return out;
}

} // namespace pvmmu::test
