// Reading the keyed state of a savepoint or checkpoint without running a job: every
// entry of one state of one operator, decoded by the schema the snapshot recorded for it
// (`weir savepoint dump`).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace weir::savepoint {

// Writes every entry of keyed state `state` of operator `operatorId` (its uid, or the id
// `weir savepoint inspect` shows) in the savepoint or checkpoint at `path` to `out`, one
// JSON object per line in key-group order: "keyGroup", "key", "namespace" (absent for
// state outside windows), "userKey" (MapState), and "value" (a ListState's: the
// elements). Each value is its serializer's JSON form: a WEIR_STRUCT an object by field
// name, a vector or tuple an array, a map an array of [key, value] pairs, an optional its
// value or null, a state with a TTL {"lastAccessTimestamp", "value"}. Every file is
// verified first. Returns the number of entries. Throws weir::Error naming the problem:
// kCheckpoint for a missing or damaged snapshot, kState for no such operator or state
// (or one whose values only the job's own Serializer reads), kSerialization for an
// entry that does not decode by its schema.
uint64_t dumpKeyedState(const std::string& path, const std::string& operatorId, const std::string& state,
                        std::ostream& out);

}  // namespace weir::savepoint
