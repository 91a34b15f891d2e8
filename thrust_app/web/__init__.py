"""The browser player's Python side: the server that hosts it and the wheel Pyodide loads."""
