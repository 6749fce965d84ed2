// The trap frame's register map (cpu/traps.h kTrapFrameGpr), compiled for the
// host: through GprView (pv/decode.h) as pv/ptwr.cc reads a frame in place,
// register i in x86 encoding order is the frame's field of that name, RSP
// the one the CPU pushed.
#include <gtest/gtest.h>

#include <stdint.h>

#include "cpu/traps.h"
#include "pv/decode.h"

namespace pvmmu::x86 {
namespace {

TEST(TrapFrameGpr, EachRegisterIsItsNamedField)
{
    TrapFrame f{};
    uint64_t* const words = reinterpret_cast<uint64_t*>(&f);
    for (unsigned w = 0; w < sizeof(f) / sizeof(uint64_t); ++w) words[w] = 0x1111'0000'0000'0000ull * (w + 1) + w;
    const uint64_t named[16] = {f.rax, f.rcx, f.rdx, f.rbx, f.rsp, f.rbp, f.rsi, f.rdi,
                                f.r8,  f.r9,  f.r10, f.r11, f.r12, f.r13, f.r14, f.r15};
    const GprView regs{words, kTrapFrameGpr.word};
    for (unsigned i = 0; i < 16; ++i) EXPECT_EQ(regs[i], named[i]) << "register " << i;
}

TEST(TrapFrameGpr, TheMapPicksDistinctWords)
{
    bool seen[sizeof(TrapFrame) / sizeof(uint64_t)] = {};
    for (const uint8_t w : kTrapFrameGpr.word) {
        ASSERT_LT(w, sizeof(seen));
        EXPECT_FALSE(seen[w]) << "word " << unsigned(w);
        seen[w] = true;
    }
}

} // namespace
} // namespace pvmmu::x86
