"""Word statistics: the file the editor recordings open (see record.sh)."""
import os


def count_lines(path):
    """Return the number of lines in the file at path."""
    with open(path) as f:
        return sum(1 for _ in f)


def word_count(text):
    """Return how often each word occurs in text."""
    counts = {}
    for word in text.split():
        
    return counts


def largest_file(root):
    """Return the path of the largest file under root."""
    best, best_size = None, -1
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = os.path.join(dirpath, name)
            size = os.path.getsize(full)
            if size > best_size:
                best, best_size = full, size
    return best
