// What a person types at pvmmu-run --console, forwarded to the emulator's
// serial input, which pvmmu-hv hands to its console domain (docs/boot.md
// "Console input"). Used by run_child.cc for a child whose input is a pipe.
#pragma once

#include <string>

namespace pvmmu::run {

// Ctrl-] at a terminal ends the run, as it leaves `xl console` on Xen.
constexpr char kConsoleEscape = 0x1d;

class ConsoleInput {
public:
    // Forwards `from` (the launcher's stdin) to `to` (the child's input pipe,
    // made non-blocking here). A terminal is put in raw mode (no echo, no
    // line editing, no signals from keys: Ctrl-C reaches the guest) until
    // this object goes, or a signal or exit ends the launcher; only when the
    // launcher is the terminal's foreground job (else nothing is forwarded,
    // and `note` says why).
    ConsoleInput(int from, int to, std::string& note);
    ~ConsoleInput();
    ConsoleInput(const ConsoleInput&) = delete;
    ConsoleInput& operator=(const ConsoleInput&) = delete;

    // The descriptor to poll for reading (-1: none now: at EOF, or the pipe
    // to the child is full), and whether `to` must be polled for writing.
    int read_fd() const;
    bool wants_write() const { return !pending_.empty(); }
    // Called when read_fd() is readable (`readable`) or `to` writable:
    // reads what came, and passes it on when `may_write`. False once the
    // person typed the escape (the run is to end).
    bool pump(bool readable, bool may_write);
    bool raw() const { return raw_; }

private:
    int from_, to_;
    bool active_ = false, raw_ = false, eof_ = false;
    std::string pending_;   // read, not yet taken by the pipe
};

} // namespace pvmmu::run
