"""Discovery: import a package (in a worker) and list its public entry points, each under one
canonical qualified name, and resolve a qualified name back to its object."""
