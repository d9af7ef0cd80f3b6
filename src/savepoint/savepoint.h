// Savepoints as files: where a new one goes, and removing one (`weir savepoint
// dispose`, CLAIM mode). Taking one is the checkpoint coordinator's work
// (CheckpointCoordinator::triggerSavepoint), asked for by runtime::JobExecution.
#pragma once

#include <string>

namespace weir::savepoint {

// <directory>/savepoint-<the job id's first 6 digits>-<12 random hex digits>, as Flink
// names them.
std::string newSavepointFolder(const std::string& directory, const std::string& jobId);

// Removes the savepoint or checkpoint at `path` (its folder or its _metadata): _metadata
// first, so a removal cut short leaves no snapshot with files missing, then the folder.
// Throws weir::Error (kCheckpoint) when `path` holds no readable _metadata (nothing is
// removed then), or naming what could not be removed.
void disposeSnapshot(const std::string& path);

}  // namespace weir::savepoint
