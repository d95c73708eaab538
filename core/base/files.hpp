// Writing files safely. Every file is written to a hidden temporary beside its target and
// renamed over it only when complete, so a failure (full disk, no permission, a signal) never
// leaves a half-written or destroyed file, and no temporary stays behind:
//   * the temporary is an unnamed O_TMPFILE where the file system has them (nothing to leave
//     even after SIGKILL), linked in under a short hidden name only to be renamed at once;
//     elsewhere a short hidden name (".attnviz-XXXXXX", so a 255-byte target name still works);
//   * a named temporary is removed by a handler of SIGINT, SIGTERM, SIGHUP and SIGQUIT before
//     the signal takes its usual course; SIGXFSZ (file size limit) is ignored while writing, so
//     the write fails and is reported instead of killing the process;
//   * a symbolic link is followed (the file it names is replaced, the link stays);
//   * a device or a pipe (/dev/null, a FIFO) is written in place, never replaced by a file, and
//     a FIFO nothing reads from is an error at once, never a wait.
// Several files are all or nothing (FileBatch): every one is written to its temporary first,
// and only when all are complete are they renamed into place. A batch also refuses to write or
// remove a file that is one of the run's inputs, or to write one file twice under two names, and
// removes the folders it created when it is not committed.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnviz::core {

// What a path names, so that two names of one file are told apart by identity, not by string:
// an existing file (links and `..` followed) is its device and inode; a file not there yet is
// its folder's (found the same way) and its own name.
struct FileIdentity {
    unsigned long long device = 0, inode = 0;
    std::string name;  // "" for an existing file
    bool operator==(const FileIdentity&) const = default;
};
FileIdentity fileIdentity(const std::string& path);
bool sameFile(const std::string& a, const std::string& b);

// The path's extension in lower case, with its dot (".png" for "Fig.PNG"; "" when it has none):
// what a file's type is read from.
std::string lowerExtension(const std::string& path);

// Where bytes go: a file being written, standard output, a string in tests.
class ByteSink {
public:
    virtual ~ByteSink() = default;
    // Throws InputError (naming the destination) when the bytes cannot be written.
    virtual void write(std::string_view bytes) = 0;
};

// Bytes collected in a string.
class StringSink : public ByteSink {
public:
    void write(std::string_view bytes) override { text.append(bytes); }
    std::string text;
};

class FileBatch {
public:
    // Unnamed: O_TMPFILE where the file system has it, else a short hidden name. Named: always
    // the hidden name (what other file systems get; tests take this path on purpose).
    enum class Temporaries { Unnamed, Named };
    explicit FileBatch(Temporaries kind = Temporaries::Unnamed);
    FileBatch(const FileBatch&) = delete;
    FileBatch& operator=(const FileBatch&) = delete;
    ~FileBatch();  // removes every temporary that was not committed

    // An input of the run (`what`: "the model's config.json"): open() and removeOnCommit() refuse
    // it under any name. A path that does not exist protects nothing.
    void protect(const std::string& path, std::string what);
    // Checks that `path` can be written (its folder exists, it is not a folder; a FIFO has a
    // reader; it is no input and not already in the batch) and opens its temporary; the returned
    // sink writes there (buffered). Throws InputError(path, reason); nothing is changed on disk then.
    ByteSink& open(const std::string& path);
    void add(const std::string& path, std::string_view bytes) { open(path).write(bytes); }
    // A file that commit() removes, if it exists (an output the new set does not hold).
    void removeOnCommit(const std::string& path);
    // A folder for outputs, made now with any folders above it that are missing; those it made
    // are removed again (when empty) unless the batch is committed.
    void makeFolder(const std::string& dir);
    // Flushes and syncs every file, then renames each into place and removes what was named.
    void commit();

    struct Entry;

private:
    Temporaries m_kind;
    std::vector<std::unique_ptr<Entry>> m_entries;
    std::vector<std::string> m_removals;
    std::vector<std::pair<FileIdentity, std::string>> m_inputs;  // protected, with what each is
    std::vector<std::string> m_madeFolders;                      // outermost first
    void refuseInput(const std::string& path, const FileIdentity& id) const;
};

// One file, all or nothing. Throws InputError(path, reason); the old file, if any, is untouched.
void writeFileAtomic(const std::string& path, std::string_view bytes);

// Hidden temporaries this process has visible right now (for tests: none after any write).
int visibleTemporaries();

// Reads a whole text file (a scenario, a lesson, the session, a tokenizer's files); throws
// InputError(path, …) when it cannot, or when it holds more than `maxBytes` (a device such as
// /dev/zero would otherwise fill the memory); the message names the bound as the most `kind` may
// be. A regular file over it is refused from its size, unread; a pipe or a device is read to one
// byte past it, and a named pipe that nothing writes to is not waited for.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{256} << 20;
std::string readTextFile(const std::string& path, std::size_t maxBytes = kMaxTextFileBytes, std::string_view kind = "a scenario file");

}  // namespace attnviz::core
