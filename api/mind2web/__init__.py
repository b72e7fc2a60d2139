"""The Mind2Web API: websites and seed tasks, proposal rounds, the proposal review queue, demonstration tasks."""
