// A converter's view of the bank, in C++17 through the tunebank C API: open a bank, read op
// templates (one JSON object per line), derive each op's keys under the ATC options given on the
// command line, look every key up, and print hit/miss and the strategy.
//
//   convert --ops OPS.jsonl [--bank FILE] [--builtin FILE]... [--threads N]
//           --soc_version=SOC [ATC options]
//
// Without --bank the bank is found as AOE finds it (TUNE_BANK_PATH, ASCEND_CACHE_PATH, $HOME).
// Output, one line per op profile (opN is the op's line number, from 0):
//   opN <tab> profile <tab> key <tab> hit <tab> layer=L <tab> shadowed=S <tab> tuned_us=T <tab> strategy
//   opN <tab> profile <tab> key <tab> miss
// then "H/T hits". Exit status: 0 done, 2 bad input or a bank error (message on stderr).
//
// Every key is looked up twice, one at a time and in one batch, and by descriptor for profile
// 0; with --threads N, N threads sharing the one handle look every key up again. The program
// fails if any answers differ. Buffers start small on purpose, so the required-size protocol is
// exercised. Finally it checks that a closed handle is refused.

#include <tunebank.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Key = std::vector<uint8_t>;  // TUNEBANK_KEY_LEN bytes

struct BankError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const char* what, TunebankStatus status) {
  throw BankError(std::string(what) + ": " + tunebank_status_name(status) + ": " +
                  tunebank_last_error());
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string hex(const uint8_t* key) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < TUNEBANK_KEY_LEN; ++i) {
    out += digits[key[i] >> 4];
    out += digits[key[i] & 15];
  }
  return out;
}

/// Owns a bank handle; closes it once.
class Bank {
 public:
  Bank(const char* path, const std::string& soc, const std::vector<std::string>& builtin) {
    std::vector<const char*> list;
    for (const auto& b : builtin) list.push_back(b.c_str());
    TunebankStatus s =
        tunebank_open(path, soc.c_str(), list.data(), list.size(),
                      TUNEBANK_OPEN_READ_ONLY | TUNEBANK_OPEN_NO_DEFAULT_BUILTIN, &handle_);
    if (s != TUNEBANK_STATUS_OK) fail("open bank", s);
  }
  Bank(const Bank&) = delete;
  Bank& operator=(const Bank&) = delete;
  ~Bank() {
    if (handle_ != 0) tunebank_close(handle_);
  }
  TunebankBank handle() const { return handle_; }

 private:
  TunebankBank handle_ = 0;
};

/// One look-up's answer.
struct Answer {
  TunebankStatus status = TUNEBANK_STATUS_MISS;
  TunebankHitInfo info{};
  std::string strategy;
};

std::vector<Key> derive_keys(const std::string& op, const std::string& options) {
  std::vector<Key> keys;
  std::vector<uint8_t> flat(TUNEBANK_KEY_LEN);  // room for one profile; grown on demand
  size_t count = 0;
  TunebankStatus s =
      tunebank_derive_keys(op.c_str(), options.c_str(), flat.data(), 1, &count);
  if (s == TUNEBANK_STATUS_BUFFER_TOO_SMALL) {
    flat.resize(count * TUNEBANK_KEY_LEN);
    s = tunebank_derive_keys(op.c_str(), options.c_str(), flat.data(), count, &count);
  }
  if (s != TUNEBANK_STATUS_OK) fail("derive keys", s);
  for (size_t i = 0; i < count; ++i) {
    keys.emplace_back(flat.begin() + i * TUNEBANK_KEY_LEN,
                      flat.begin() + (i + 1) * TUNEBANK_KEY_LEN);
  }
  return keys;
}

Answer lookup(const Bank& bank, const Key& key) {
  Answer a;
  std::vector<char> buf(8);
  size_t len = 0;
  a.status = tunebank_lookup_key(bank.handle(), key.data(), buf.data(), buf.size(), &len, &a.info);
  if (a.status == TUNEBANK_STATUS_BUFFER_TOO_SMALL) {
    buf.resize(len + 1);
    a.status =
        tunebank_lookup_key(bank.handle(), key.data(), buf.data(), buf.size(), &len, &a.info);
  }
  if (a.status == TUNEBANK_STATUS_OK) {
    a.strategy.assign(buf.data(), len);
  } else if (a.status != TUNEBANK_STATUS_MISS) {
    fail(("look up " + hex(key.data())).c_str(), a.status);
  }
  return a;
}

int run(int argc, char** argv) {
  std::string ops_path, soc, bank_path;
  unsigned threads = 1;
  std::vector<std::string> builtin, atc;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw BankError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--ops") {
      ops_path = value();
    } else if (arg == "--bank") {
      bank_path = value();
    } else if (arg == "--threads") {
      threads = static_cast<unsigned>(std::stoul(value()));
    } else if (arg == "--builtin") {
      builtin.push_back(value());
    } else {
      if (arg.rfind("--soc_version=", 0) == 0) soc = arg.substr(std::strlen("--soc_version="));
      atc.push_back(arg);
    }
  }
  if (ops_path.empty() || soc.empty()) {
    throw BankError("usage: convert --ops OPS.jsonl [--bank FILE] [--builtin FILE]... "
                    "--soc_version=SOC [ATC options]");
  }
  std::string options = "[";
  for (size_t i = 0; i < atc.size(); ++i) options += (i ? "," : "") + json_string(atc[i]);
  options += "]";

  std::ifstream in(ops_path);
  if (!in) throw BankError("cannot read " + ops_path);
  std::vector<std::string> ops;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) ops.push_back(line);
  }

  Bank bank(bank_path.empty() ? nullptr : bank_path.c_str(), soc, builtin);
  std::vector<Key> all_keys;
  std::vector<Answer> answers;
  size_t hits = 0;
  for (size_t op = 0; op < ops.size(); ++op) {
    std::vector<Key> keys = derive_keys(ops[op], options);
    for (size_t p = 0; p < keys.size(); ++p) {
      Answer a = lookup(bank, keys[p]);
      std::cout << "op" << op << '\t' << p << '\t' << hex(keys[p].data()) << '\t';
      if (a.status == TUNEBANK_STATUS_OK) {
        ++hits;
        char tuned[64];
        std::snprintf(tuned, sizeof tuned, "%.3f", a.info.tuned_us);
        std::cout << "hit\tlayer=" << a.info.layer << "\tshadowed=" << a.info.shadowed
                  << "\ttuned_us=" << tuned << '\t' << a.strategy << '\n';
      } else {
        std::cout << "miss\n";
      }
      all_keys.push_back(keys[p]);
      answers.push_back(a);
    }
    // By descriptor: same key and answer as the first profile's.
    Key key(TUNEBANK_KEY_LEN);
    size_t len = 0;
    TunebankStatus s = tunebank_lookup_op(bank.handle(), ops[op].c_str(), options.c_str(), 0,
                                          nullptr, 0, &len, nullptr, key.data());
    TunebankStatus want = answers[answers.size() - keys.size()].status;
    bool same = key == keys[0] && (want == TUNEBANK_STATUS_OK
                                       ? s == TUNEBANK_STATUS_BUFFER_TOO_SMALL
                                       : s == want);
    if (!same) throw BankError("look-up by descriptor disagrees for op" + std::to_string(op));
  }

  // The whole model in one batch.
  std::vector<uint8_t> flat;
  for (const Key& k : all_keys) flat.insert(flat.end(), k.begin(), k.end());
  std::vector<TunebankStatus> statuses(all_keys.size());
  std::vector<size_t> offsets(all_keys.size());
  size_t total = 0;
  std::vector<char> text(16);
  TunebankStatus s = tunebank_lookup_batch(bank.handle(), flat.data(), all_keys.size(),
                                           statuses.data(), offsets.data(), text.data(),
                                           text.size(), &total);
  if (s == TUNEBANK_STATUS_BUFFER_TOO_SMALL) {
    text.resize(total);
    s = tunebank_lookup_batch(bank.handle(), flat.data(), all_keys.size(), statuses.data(),
                              offsets.data(), text.data(), text.size(), &total);
  }
  if (s != TUNEBANK_STATUS_OK) fail("batch look-up", s);
  for (size_t i = 0; i < all_keys.size(); ++i) {
    bool same = statuses[i] == answers[i].status &&
                (statuses[i] != TUNEBANK_STATUS_OK ||
                 answers[i].strategy == std::string(text.data() + offsets[i]));
    if (!same) throw BankError("batch look-up disagrees at key " + std::to_string(i));
  }

  // One handle shared by threads (the C API allows it).
  if (threads > 1) {
    std::vector<std::thread> pool;
    std::vector<size_t> disagreements(threads, 0);
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (size_t i = 0; i < all_keys.size(); ++i) {
          Answer a = lookup(bank, all_keys[(i + t) % all_keys.size()]);
          const Answer& want = answers[(i + t) % all_keys.size()];
          if (a.status != want.status || a.strategy != want.strategy) ++disagreements[t];
        }
      });
    }
    for (auto& th : pool) th.join();
    for (size_t d : disagreements) {
      if (d != 0) throw BankError("a thread's look-ups disagree with the first pass");
    }
  }

  // A closed handle is refused, not dereferenced.
  TunebankBank closed = 0;
  TunebankStatus opened = tunebank_open(bank_path.empty() ? nullptr : bank_path.c_str(),
                                        soc.c_str(), nullptr, 0,
                                        TUNEBANK_OPEN_READ_ONLY | TUNEBANK_OPEN_NO_DEFAULT_BUILTIN,
                                        &closed);
  if (opened != TUNEBANK_STATUS_OK) fail("open bank", opened);
  tunebank_close(closed);
  if (!all_keys.empty() &&
      tunebank_lookup_key(closed, all_keys[0].data(), nullptr, 0, nullptr, nullptr) !=
          TUNEBANK_STATUS_INVALID_HANDLE) {
    throw BankError("a closed handle was not refused");
  }

  std::cout << hits << '/' << all_keys.size() << " hits\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "convert: " << e.what() << '\n';
    return 2;
  }
}
