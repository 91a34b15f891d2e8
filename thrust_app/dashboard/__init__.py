"""The Streamlit dashboard (`thrust app`): start, watch, compare, export and play training runs."""
