// Names for the records a key holds (replay/record_ids.h): a key takes one word for a recorded
// object (its kind above its record's name) instead of its record's words, so that a cuBLASLt matmul's
// key is a third as long. A version of a record is named once, by the registry's table of names
// from its words, and its name kept beside it in the registry (remember()): a record read again
// unchanged is named without a look at its words, and so is one made over the words of a record
// named before, when its own code can tell that it wrote nothing else (`kept`: the registry's
// remembered()).
#pragma once

#include <atomic>
#include <cstdint>

#include "replay/record_ids.h"
#include "shim/engine/replay_thread.h"

namespace cudnn_fastpath::shim {

// Where a record's name goes in a key: its kind in the top byte, above a name (names stay below 2^56).
inline std::uint64_t named_record(std::uint32_t kind, std::uint64_t name) noexcept {
  return std::uint64_t{kind} << 56 | name;
}

// For a kind whose records cannot tell whether they were made over words of their own.
struct NeverKept {
  bool operator()(const std::atomic<std::uint64_t>*, std::uint32_t) const noexcept { return false; }
};

// The name of the record of `object` (of `kind`) in `registry`, from `names` (the registry's table);
// 0 when the registry does not hold it usable. `copy(words, length, into)` writes what names the
// record (its words, or a shorter form of them that says the same: cuBLASLt's records keep only the
// attributes set) and returns its length, at most Registry::kWords; it is called only for a version
// of the record not named before (nor made over a named one and kept: `kept`, as the registry's
// remembered() says), whose name is then remembered by the registry beside that version.
// `peek(words, length)`, for what the caller needs of the record besides its name (an attribute, a
// data type), is called on every read. What either reads is good only when a name is returned.
// `seen`, when given, is told which version of the record the name is for (Registry::still).
template <typename Registry, typename Names, typename Copy, typename Peek, typename Kept = NeverKept>
[[gnu::always_inline]] inline std::uint64_t record_name(Registry& registry, Names& names, const void* object,
                                                        std::uint32_t kind, Copy&& copy, Peek&& peek,
                                                        Kept&& kept = Kept{},
                                                        typename Registry::Version* seen = nullptr) noexcept {
  auto name = [&names, kind](const std::uint64_t* words, std::uint32_t length) {
    ReplayThread* t = replay_thread();
    replay::NameBlock spare;  // a thread without a replay block names from a block of its own, once
    return names.name(kind, words, length, t != nullptr ? t->names : spare);
  };
  return registry.valued(object, kind, peek, kept, copy, name, seen);
}

}  // namespace cudnn_fastpath::shim
